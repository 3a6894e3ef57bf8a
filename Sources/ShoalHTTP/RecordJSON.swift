// RecordJSON: records and field values as the HTTP API writes and reads them (the shape of `shoal get --json`).

import Foundation
package import Shoal
import ShoalWireJSON

/// Records as JSON, in the shape `shoal get --json` prints: `name`, `zone`, `type`, `fields`,
/// `deleted`, `changeTag`, `modified`, `modifiedBy`, `created`, `createdBy` and, for fields
/// with unresolved concurrent values, `concurrent`.
///
/// A value is written as JSON's own type where it has one (string, integer, double, bool, list)
/// and as a one-key object otherwise: `{"bytes": hex}`, `{"date": ISO 8601}`,
/// `{"reference": name, "deleteSelf": bool}`, `{"asset": hash, "size": n}`,
/// `{"latitude": x, "longitude": y}`. ``value(_:field:zone:)`` reads the same forms back.
package enum RecordJSON {
    /// A value as JSON (``Inspection/value(_:assets:)``, assets as hash and size).
    package static func value(_ v: FieldValue) -> Any { Inspection.value(v, assets: .hashAndSize) }

    /// A record as JSON (``Inspection/record(_:assets:)``, assets as hash and size).
    package static func object(_ r: Record) -> [String: Any] { Inspection.record(r, assets: .hashAndSize) }

    /// The field value a JSON value stands for; nil for JSON null (the field is removed).
    /// - Throws: ``APIError`` 400 naming the field and the forms it may take.
    package static func value(_ json: JSONValue, field: String, zone: RecordZone.ID) throws(APIError) -> FieldValue? {
        switch json {
        case .null: return nil
        case .string(let s): return .string(s)
        case .int(let i): return .int64(i)
        case .double(let d): return .double(d)
        case .bool(let b): return .bool(b)
        case .array(let elements):
            var values = [FieldValue]()
            for e in elements {
                guard let v = try value(e, field: field, zone: zone), !v.isList else {
                    throw APIError.invalid("field \(field): a list holds values of one type, not null nor lists")
                }
                values.append(v)
            }
            guard let list = ListValue(values, kind: values.first?.kind ?? .string) else {
                throw APIError.invalid(
                    "field \(field): a list holds values of one type (e.g. [1, 2] or [\"a\", \"b\"])")
            }
            return .list(list)
        case .object(let o):
            return try tagged(o, field: field, zone: zone)
        }
    }

    /// A value written as a one-key object: bytes, date, reference or location.
    private static func tagged(_ o: [String: JSONValue], field: String, zone: RecordZone.ID) throws(APIError)
        -> FieldValue
    {
        let forms =
            "{\"bytes\": hex}, {\"date\": ISO 8601}, {\"reference\": name, \"deleteSelf\": bool} or {\"latitude\": x, \"longitude\": y}"
        if case .string(let hex)? = o["bytes"] {
            guard hex.utf8.count % 2 == 0, let bytes = Self.bytes(hex: hex) else {
                throw APIError.invalid("field \(field): bytes are an even number of hex digits")
            }
            return .bytes(bytes)
        }
        if case .string(let text)? = o["date"] {
            guard let t = Timestamp(iso8601: text) else {
                throw APIError.invalid(
                    "field \(field): \(text.debugDescription) is not an ISO 8601 date (2026-11-22T10:00:00Z)")
            }
            return .date(t)
        }
        if case .string(let name)? = o["reference"] {
            guard !name.isEmpty else {
                throw APIError.invalid("field \(field): a reference names a record of the same zone")
            }
            var deleteSelf = false
            if case .bool(let b)? = o["deleteSelf"] { deleteSelf = b }
            return .reference(
                Reference(recordID: Record.ID(name: name, zone: zone), action: deleteSelf ? .deleteSelf : .none))
        }
        if let lat = number(o["latitude"]), let lon = number(o["longitude"]) {
            guard (-90...90).contains(lat), (-180...180).contains(lon) else {
                throw APIError.invalid("field \(field): latitude is -90…90 and longitude -180…180")
            }
            return .location(Location(latitude: lat, longitude: lon))
        }
        if o["asset"] != nil {
            throw APIError.invalid(
                "field \(field): assets are stored with `shoal put FIELD=@file`, not through the API")
        }
        throw APIError.invalid("field \(field): an object value is one of \(forms)")
    }

    private static func number(_ v: JSONValue?) -> Double? {
        switch v {
        case .int(let i)?: return Double(i)
        case .double(let d)?: return d
        default: return nil
        }
    }

    private static func bytes(hex: String) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8? = nil
        for c in hex.utf8 {
            let n: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): n = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): n = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): n = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high { out.append(h << 4 | n); high = nil } else { high = n }
        }
        return out
    }
}
