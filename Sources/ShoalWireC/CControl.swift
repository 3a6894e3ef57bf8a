// CControl: the C entry points for control payloads (error, ping, goodbye), discovery
// announcements and device IDs (shoalwire.h), in the JSON and text forms of Spec/vectors.

public import CShoalWire
import ShoalWire
import ShoalWireJSON

/// Decodes a control payload of `kind` into its JSON form (shoalwire.h).
@_cdecl("shoal_control_decode_json")
public func shoalControlDecodeJSON(
    _ kind: UnsafePointer<CChar>?, _ bytes: UnsafePointer<UInt8>?, _ len: Int,
    _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(json)
        let k = try CControl.kind(kind)
        try CBoundary.hand(json: try VectorJSON.control(k, [UInt8](try CBoundary.input(bytes, len))), to: json)
    }
}

/// Encodes a control payload of `kind` given in its JSON form (shoalwire.h).
@_cdecl("shoal_control_encode_json")
public func shoalControlEncodeJSON(
    _ kind: UnsafePointer<CChar>?, _ json: UnsafePointer<CChar>?,
    _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, _ len: UnsafeMutablePointer<Int>?,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        let k = try CControl.kind(kind)
        let encoded = try VectorJSON.encodeControl(k, try VectorJSON.object(try CBoundary.json(json, "json"), "json"))
        // Checked by decoding: an error code that is not an identifier, say, fails as the decoder says.
        _ = try VectorJSON.control(k, encoded)
        try CBoundary.hand(bytes: encoded, to: bytes, length: len)
    }
}

/// Decodes a discovery announcement into its JSON form (shoalwire.h).
@_cdecl("shoal_discovery_decode_json")
public func shoalDiscoveryDecodeJSON(
    _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(json)
        let announcement = try DiscoveryAnnouncement(decoding: [UInt8](try CBoundary.input(bytes, len)))
        try CBoundary.hand(json: VectorJSON.discovery(announcement), to: json)
    }
}

/// Encodes a discovery announcement given in its JSON form (shoalwire.h).
@_cdecl("shoal_discovery_encode_json")
public func shoalDiscoveryEncodeJSON(
    _ json: UnsafePointer<CChar>?, _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ len: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        let encoded = try VectorJSON.discovery(try VectorJSON.object(try CBoundary.json(json, "json"), "json"))
            .encoded()
        // Checked by decoding: no endpoint, or port 0, fails as the decoder says.
        _ = try DiscoveryAnnouncement(decoding: encoded)
        try CBoundary.hand(bytes: encoded, to: bytes, length: len)
    }
}

/// A device ID's 32 bytes as its checksummed text form (shoalwire.h).
@_cdecl("shoal_device_id_to_text")
public func shoalDeviceIDToText(
    _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ text: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(text)
        let input = try CBoundary.input(bytes, len)
        guard let id = DeviceID(bytes: input) else {
            throw CArgumentError("a device ID is \(DeviceID.byteCount) bytes, not \(input.count)")
        }
        try CBoundary.hand(text: Array(id.text.utf8), to: text)
    }
}

/// A device ID's text form parsed, check characters verified, into its 32 bytes (shoalwire.h).
@_cdecl("shoal_device_id_from_text")
public func shoalDeviceIDFromText(
    _ text: UnsafePointer<CChar>?, _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ len: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        let id = try DeviceID(text: try CBoundary.string(text, "text"))
        try CBoundary.hand(bytes: id.bytes, to: bytes, length: len)
    }
}

/// The kinds the control entry points take.
enum CControl {
    /// `kind`, checked to be a control payload kind.
    static func kind(_ kind: UnsafePointer<CChar>?) throws -> String {
        let k = try CBoundary.string(kind, "kind")
        guard VectorJSON.controlKinds.contains(k) else {
            throw CArgumentError(
                "\(k) is not a control payload kind (\(VectorJSON.controlKinds.joined(separator: ", ")))")
        }
        return k
    }
}
