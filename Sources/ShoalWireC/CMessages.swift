// CMessages: the C entry points for replication message payloads (shoalwire.h), in the JSON form
// of Spec/vectors/README.md, "Message vectors".

public import CShoalWire
import ShoalWire
import ShoalWireJSON

/// The zone and stated knowledge a `liveChanges` payload is read against (not on the wire).
struct LiveContext {
    var zone = VectorJSON.liveZone
    var stated = VectorJSON.liveReference

    /// `{"zone": {...}, "stated": [...]}`, each member optional; NULL gives the Spec vectors' context.
    init(_ text: UnsafePointer<CChar>?) throws {
        guard text != nil else { return }
        let o = try VectorJSON.object(try CBoundary.json(text, "context_json"), "context_json")
        if let z = VectorJSON.optional(o["zone"]) { zone = try VectorJSON.zone(z, "context_json.zone") }
        if let s = VectorJSON.optional(o["stated"]) { stated = try VectorJSON.vector(s, "context_json.stated") }
    }
}

/// Decodes a replication message payload of `kind` into its JSON form (shoalwire.h).
@_cdecl("shoal_message_decode_json")
public func shoalMessageDecodeJSON(
    _ kind: UnsafePointer<CChar>?, _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ context: UnsafePointer<CChar>?,
    _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(json)
        let k = try CBoundary.string(kind, "kind")
        guard VectorJSON.messageKinds.contains(k) else {
            throw CArgumentError("\(k) is not a message kind (\(VectorJSON.messageKinds.joined(separator: ", ")))")
        }
        let live = try LiveContext(context)
        let decoded = try VectorJSON.message(
            k, [UInt8](try CBoundary.input(bytes, len)), zone: live.zone, stated: live.stated)
        try CBoundary.hand(json: decoded.json, to: json)
    }
}

/// Encodes a replication message of `kind` given in its JSON form (shoalwire.h).
@_cdecl("shoal_message_encode_json")
public func shoalMessageEncodeJSON(
    _ kind: UnsafePointer<CChar>?, _ json: UnsafePointer<CChar>?, _ context: UnsafePointer<CChar>?,
    _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, _ len: UnsafeMutablePointer<Int>?,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        let k = try CBoundary.string(kind, "kind")
        guard VectorJSON.messageKinds.contains(k) else {
            throw CArgumentError("\(k) is not a message kind (\(VectorJSON.messageKinds.joined(separator: ", ")))")
        }
        let live = try LiveContext(context)
        let object = try VectorJSON.object(try CBoundary.json(json, "json"), "json")
        let encoded = try VectorJSON.encodeMessage(k, object, stated: live.stated)
        _ = try VectorJSON.message(k, encoded, zone: live.zone, stated: live.stated)
        try CBoundary.hand(bytes: encoded, to: bytes, length: len)
    }
}
