// CRecords: the C entry points for records, tombstones, deltas and field values (shoalwire.h),
// in the JSON form of Spec/vectors/README.md.

public import CShoalWire
import ShoalWire
import ShoalWireJSON

/// The zone of the Spec's vectors, for a delta or value whose caller names none.
let vectorZone = RecordZone.ID(name: "notes")

/// Decodes a record's canonical bytes into its JSON form (shoalwire.h).
@_cdecl("shoal_record_decode_json")
public func shoalRecordDecodeJSON(
    _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(json)
        let record = try Record(decoding: try CBoundary.input(bytes, len))
        try CBoundary.hand(json: VectorJSON.record(record), to: json)
    }
}

/// Encodes a record given in its JSON form; the result is checked by decoding it (shoalwire.h).
@_cdecl("shoal_record_encode_json")
public func shoalRecordEncodeJSON(
    _ json: UnsafePointer<CChar>?, _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ len: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        let encoded = try VectorJSON.record(try CBoundary.json(json, "json")).encoded()
        _ = try Record(decoding: encoded)
        try CBoundary.hand(bytes: encoded, to: bytes, length: len)
    }
}

/// Decodes a tombstone into its JSON form (shoalwire.h).
@_cdecl("shoal_tombstone_decode_json")
public func shoalTombstoneDecodeJSON(
    _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(json)
        let tombstone = try Tombstone(decoding: [UInt8](try CBoundary.input(bytes, len)))
        try CBoundary.hand(json: VectorJSON.tombstone(tombstone), to: json)
    }
}

/// Encodes a tombstone given in its JSON form (shoalwire.h).
@_cdecl("shoal_tombstone_encode_json")
public func shoalTombstoneEncodeJSON(
    _ json: UnsafePointer<CChar>?, _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ len: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        let encoded = try VectorJSON.tombstone(try CBoundary.json(json, "json")).encoded()
        _ = try Tombstone(decoding: encoded)
        try CBoundary.hand(bytes: encoded, to: bytes, length: len)
    }
}

/// Decodes a record delta of a record in `zone_json` (shoalwire.h).
@_cdecl("shoal_delta_decode_json")
public func shoalDeltaDecodeJSON(
    _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ zone: UnsafePointer<CChar>?,
    _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(json)
        let z = try CBoundary.zone(zone, fallback: vectorZone)
        let delta = try RecordDelta(decoding: [UInt8](try CBoundary.input(bytes, len)), zone: z)
        try CBoundary.hand(json: VectorJSON.delta(delta), to: json)
    }
}

/// Encodes a record delta given in its JSON form (shoalwire.h).
@_cdecl("shoal_delta_encode_json")
public func shoalDeltaEncodeJSON(
    _ json: UnsafePointer<CChar>?, _ zone: UnsafePointer<CChar>?,
    _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ len: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        let z = try CBoundary.zone(zone, fallback: vectorZone)
        let encoded = try VectorJSON.delta(try CBoundary.json(json, "json")).encoded(zone: z)
        _ = try RecordDelta(decoding: encoded, zone: z)
        try CBoundary.hand(bytes: encoded, to: bytes, length: len)
    }
}

/// Decodes a field value: its type tag, then its payload (shoalwire.h).
@_cdecl("shoal_value_decode_json")
public func shoalValueDecodeJSON(
    _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ zone: UnsafePointer<CChar>?,
    _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(json)
        let value = try TaggedValue.decode(
            try CBoundary.input(bytes, len), zone: try CBoundary.zone(zone, fallback: vectorZone))
        try CBoundary.hand(json: VectorJSON.value(value), to: json)
    }
}

/// Encodes a typed field value given in its JSON form (shoalwire.h).
@_cdecl("shoal_value_encode_json")
public func shoalValueEncodeJSON(
    _ json: UnsafePointer<CChar>?, _ zone: UnsafePointer<CChar>?,
    _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ len: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        let z = try CBoundary.zone(zone, fallback: vectorZone)
        let encoded = TaggedValue.encode(try VectorJSON.value(try CBoundary.json(json, "json"), "json"), zone: z)
        _ = try encoded.withUnsafeBytes { raw throws(WireError) in try TaggedValue.decode(raw, zone: z) }
        try CBoundary.hand(bytes: encoded, to: bytes, length: len)
    }
}

/// A field value as Spec/vectors holds it: the slot's type tag (stamped bit clear), then the payload.
enum TaggedValue {
    static func decode(_ raw: UnsafeRawBufferPointer, zone: RecordZone.ID) throws(WireError) -> FieldValue {
        var r = WireReader(raw, limits: .default)
        let tag = try r.readByte("value type tag")
        let v = try FieldValue.decodePayload(tag: tag, at: 0, from: &r, zone: zone)
        try r.expectEnd("the value")
        return v
    }

    static func encode(_ v: FieldValue, zone: RecordZone.ID) -> [UInt8] {
        WireWriter.encode(size: 1 &+ v.payloadSize(zone: zone)) { w in
            w.writeByte(v.tag)
            v.encodePayload(into: &w, zone: zone)
        }
    }
}
