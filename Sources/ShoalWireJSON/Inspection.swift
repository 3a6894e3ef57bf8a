// Inspection: what `shoal inspect` shows for any Shoal bytes, as JSON objects — shared by the
// command and the C library's shoal_inspect_json.

import Foundation
package import ShoalWire

/// Decodes any Shoal bytes for people and scripts: the `protoc --decode_raw` of Shoal.
package enum Inspection {
    /// `--as` named something other than auto, frames, record, delta, tombstone or token.
    package struct UnknownKind: Error, CustomStringConvertible {
        package let kind: String
        package var description: String { "--as \(kind) is not one of auto, frames, record, delta, tombstone, token" }
    }

    /// The kind `auto` picks, and the bytes to decode: frames for bytes starting "SH", a token
    /// for "ST" or for base64url token text, a record otherwise.
    package static func detect(_ bytes: [UInt8]) -> (kind: String, bytes: [UInt8]) {
        if bytes.starts(with: [0x53, 0x48]) { return ("frames", bytes) }
        if bytes.starts(with: [0x53, 0x54]) { return ("token", bytes) }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if !text.isEmpty, let t = ChangeToken(text: text) { return ("token", t.bytes) }
        return ("record", bytes)
    }

    /// A zone written `name` or `name@owner`.
    package static func zone(_ text: String) -> RecordZone.ID {
        if let at = text.lastIndex(of: "@"), at != text.startIndex {
            return RecordZone.ID(name: String(text[..<at]), owner: String(text[text.index(after: at)...]))
        }
        return RecordZone.ID(name: text)
    }

    /// What `bytes` decode to as `kind` (frames, record, delta, tombstone, token), as JSON
    /// objects; a delta is read in `zone`.
    /// - Throws: ``WireError`` for malformed bytes, ``UnknownKind`` for another `kind`.
    package static func decode(_ kind: String, _ bytes: [UInt8], zone: RecordZone.ID) throws -> Any {
        switch kind {
        case "frames":
            var reader = FrameReader()
            let frames = try reader.frames(in: bytes)
            if reader.bufferedByteCount > 0 {
                throw WireError(
                    .truncated, at: reader.consumedByteCount,
                    "the last frame is incomplete: \(reader.bufferedByteCount) byte(s) of it")
            }
            return frames.map { f -> [String: Any] in
                var o: [String: Any] = [
                    "type": f.type.description, "payload_bytes": f.payload.count, "compression": "\(f.compression)"
                ]
                // The frame is valid; a payload that is not the message its type names is
                // reported beside it (frames carry anything; the replication layer rejects it).
                do { o["payload"] = try payload(f) } catch { o["payload_error"] = "\(error)" }
                return o
            }
        case "record": return record(try Record(decoding: bytes), assets: .summary)
        case "delta":
            let d = try RecordDelta(decoding: bytes, zone: zone)
            return [
                "base": String(d.baseTag, radix: 16), "system": d.system != nil,
                "operations": d.operations.map { "\($0)" }
            ]
        case "tombstone":
            let t = try Tombstone(decoding: bytes)
            return [
                "name": t.id.name, "zone": t.id.zone.description, "type": t.recordType, "deletedBy": t.deletedBy.hex,
                "deleted": t.deletionDate.description
            ]
        case "token":
            let c = try ChangeToken(bytes: bytes).contents()
            var o: [String: Any] = [
                "kind": "\(c.kind)", "incarnation": c.incarnation.hex,
                "vector": c.vector.entries.map { ["node": $0.node.hex, "hlc": $0.hlc.description] }
            ]
            if let cur = c.cursor { o["cursor"] = ["source": cur.source.hex, "sequence": cur.sequence] }
            return o
        default:
            throw UnknownKind(kind: kind)
        }
    }

    /// A frame's payload decoded as the message its type names.
    static func payload(_ f: Frame) throws -> Any {
        switch f.type {
        case .hello:
            let m = try HelloMessage(decoding: f.payload)
            return [
                "node": m.node.hex, "name": m.name, "versions": "\(m.minimumVersion)-\(m.maximumVersion)",
                "zones": m.zones.map(\.description), "dictionaries": m.dictionaries
            ]
        case .changes:
            let m = try ChangesMessage(decoding: f.payload)
            var o: [String: Any] = [
                "zone": m.zone.description, "batch": m.batch, "caughtUp": m.isCaughtUp,
                "records": m.records.map { record($0, assets: .summary) }
            ]
            if m.isReset { o["reset"] = true }
            if let base = m.base {
                o["sparseBase"] = base.description
                o["sparseRecords"] = m.sparseRecords.map { s -> [String: Any] in
                    var item: [String: Any] = [
                        "name": s.id.name, "type": s.recordType, "entries": s.entries.description,
                        "heads": s.heads.map { "\($0.node.short)\($0.isDeletion ? " (delete)" : "")" },
                        "fields": Dictionary(
                            s.fields.map { ($0.name, $0.value.map { "\($0)" } ?? "(removed)") },
                            uniquingKeysWith: { a, _ in a })
                    ]
                    // Delta slots: the edit of the slot the receiver holds, named by its stamp.
                    if !s.deltas.isEmpty {
                        item["deltas"] = Dictionary(
                            s.deltas.map { d -> (String, String) in
                                let edits: String
                                switch d.edit {
                                case .patch(let p):
                                    edits = p.map { "patch @\($0.offset) -\($0.deleteCount) +\($0.insert.count) bytes" }
                                        .joined(separator: ", ")
                                case .splice(let kind, let sp):
                                    edits = sp.map {
                                        "splice @\($0.offset) -\($0.deleteCount) +\($0.insert.count) \(kind)"
                                    }.joined(separator: ", ")
                                }
                                return (
                                    d.name,
                                    "\(edits) on \(d.baseStamp.node.short)@\(d.baseStamp.hlc) (digest \(String(d.baseDigest, radix: 16)))"
                                )
                            }, uniquingKeysWith: { a, _ in a })
                    }
                    return item
                }
            }
            return o
        case .liveChanges:
            // The zone is the subscription's, which only the connection knows: the header alone.
            return ["subscription": try LiveChangesMessage.subscription(of: f.payload), "bytes": f.payload.count]
        case .subscribe:
            let m = try SubscribeMessage(decoding: f.payload)
            return ["zone": m.zone.description, "window": m.window, "fromStart": m.token == nil]
        case .acknowledgement:
            let m = try AcknowledgementMessage(decoding: f.payload)
            return ["zone": m.zone.description, "batch": m.batch]
        case .zones: return try ZonesMessage(decoding: f.payload).zones.map(\.description)
        case .wantWhole:
            let m = try WantWholeMessage(decoding: f.payload)
            return ["zone": m.zone.description, "records": m.names]
        case .error: return try ErrorMessage(decoding: f.payload).description
        case .ping, .pong: return ["nonce": try PingMessage(decoding: f.payload).nonce]
        case .goodbye: return try GoodbyeMessage(decoding: f.payload).reason
        default: return "\(f.payload.count) bytes of an unknown frame type (skipped by peers)"
        }
    }

    /// How ``value(_:assets:)`` writes an asset.
    package enum AssetForm: Sendable {
        /// `{"asset": "asset 0123…(n B)"}`: for people reading `shoal inspect` and `shoal get`.
        case summary
        /// `{"asset": sha256-hex, "size": n}`: the HTTP API's form, which a client can fetch by.
        case hashAndSize
    }

    /// A value as JSON: JSON's own type where there is one, else a one-key object
    /// (`{"bytes": hex}`, `{"date": ISO 8601}`, …); an asset in the form `assets` chooses.
    package static func value(_ v: FieldValue, assets: AssetForm) -> Any {
        switch v {
        case .string(let s): return s
        case .int64(let i): return i
        case .double(let d): return d.isFinite ? d : String(d)
        case .bool(let b): return b
        case .bytes(let b): return ["bytes": Hex.string(b)]
        case .date(let t): return ["date": t.description]
        case .reference(let r):
            return [
                "reference": r.recordID.name, "zone": r.recordID.zone.description, "deleteSelf": r.action == .deleteSelf
            ]
        case .asset(let a):
            switch assets {
            case .summary: return ["asset": "\(a)"]
            case .hashAndSize: return ["asset": a.hash.hex, "size": a.size]
            }
        case .location(let l): return ["latitude": l.latitude, "longitude": l.longitude]
        case .list(let l): return l.elements.map { value($0, assets: assets) }
        }
    }

    /// The other slots of each field with concurrent slots (a merge of concurrent writes that no
    /// save has resolved yet): values, and null for a removal.
    package static func concurrentValues(_ r: Record) -> [(name: String, values: [FieldValue?])] {
        var out = [(name: String, values: [FieldValue?])]()
        var i = 0
        while i < r.fields.count {
            let run = r.slots(for: r.fields[i].name)
            if run.count > 1 { out.append((r.fields[i].name, run.dropFirst().map(\.value))) }
            i += max(run.count, 1)
        }
        return out
    }

    /// A record as JSON: ID, zone, type, fields (each field's value: the first of its slots),
    /// the other values of fields with concurrent slots, and system fields; assets in the form
    /// `assets` chooses.
    package static func record(_ r: Record, assets: AssetForm) -> [String: Any] {
        var fields = [String: Any]()
        for k in r.allKeys { if let v = r[k] { fields[k] = value(v, assets: assets) } }
        var o: [String: Any] = [
            "name": r.id.name, "zone": r.id.zone.description, "type": r.recordType, "fields": fields,
            "deleted": r.isDeleted
        ]
        let concurrent = concurrentValues(r)
        if !concurrent.isEmpty {
            o["concurrent"] = Dictionary(
                uniqueKeysWithValues: concurrent.map { c in
                    (c.name, c.values.map { v -> Any in v.map { value($0, assets: assets) } ?? NSNull() })
                })
        }
        if let t = r.changeTag { o["changeTag"] = t }
        if let d = r.modificationDate { o["modified"] = d.description }
        if let n = r.modifiedBy { o["modifiedBy"] = n.hex }
        if let d = r.creationDate { o["created"] = d.description }
        if let n = r.createdBy { o["createdBy"] = n.hex }
        return o
    }
}
