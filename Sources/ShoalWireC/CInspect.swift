// CInspect: `shoal inspect --json` as a C call (shoalwire.h).

public import CShoalWire
import ShoalWire
import ShoalWireJSON

/// What `shoal inspect --json` prints for these bytes (shoalwire.h).
@_cdecl("shoal_inspect_json")
public func shoalInspectJSON(
    _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ kind: UnsafePointer<CChar>?, _ zone: UnsafePointer<CChar>?,
    _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(json)
        let all = [UInt8](try CBoundary.input(bytes, len))
        var (k, input) = (kind.map { String(cString: $0) } ?? "auto", all)
        if k == "auto" { (k, input) = Inspection.detect(all) }
        let z = Inspection.zone(zone.map { String(cString: $0) } ?? "notes")
        let out: Any
        do {
            out = try Inspection.decode(k, input, zone: z)
        } catch let e as Inspection.UnknownKind {
            throw CArgumentError(e.description)
        }
        try CBoundary.hand(json: out, to: json)
    }
}
