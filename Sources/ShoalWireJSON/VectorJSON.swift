// VectorJSON: the JSON form of Spec/vectors (Spec/vectors/README.md) to and from ShoalWire values.

import Foundation
package import ShoalWire

/// A JSON vector member that does not have the documented form.
package struct VectorJSONError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Maps ShoalWire values to the JSON objects of `Spec/vectors` and back.
///
/// The forms are the ones `Spec/vectors/README.md` documents: 64-bit integers as decimal strings,
/// doubles as strings (shortest round-trip decimal, `NaN`, `Infinity`, `-Infinity`, `-0.0`),
/// byte strings, node IDs and hashes as lowercase hex, absent optionals as `null`.
package enum VectorJSON {
    // MARK: Scalars

    package static func hex(_ bytes: [UInt8]) -> String { Hex.string(bytes) }

    package static func bytes(_ any: Any?, _ what: String) throws -> [UInt8] {
        guard let s = any as? String, let b = Hex.bytes(s), !s.contains(" ") else {
            throw VectorJSONError("\(what): expected a hex string")
        }
        return b
    }

    package static func string(_ any: Any?, _ what: String) throws -> String {
        guard let s = any as? String else { throw VectorJSONError("\(what): expected a string") }
        return s
    }

    /// A JSON number that is a count or offset: an integer, not negative.
    package static func int(_ any: Any?, _ what: String) throws -> Int {
        guard let i = any as? Int, i >= 0 else { throw VectorJSONError("\(what): expected an integer ≥ 0") }
        return i
    }

    /// A count written as a decimal string (`token_kept`): fits an `Int`, not negative.
    package static func count(_ any: Any?, _ what: String) throws -> Int {
        guard let v = Int(exactly: try uint64(any, what)) else { throw VectorJSONError("\(what): too large") }
        return v
    }

    /// A 32-bit unsigned number written as a decimal string.
    package static func uint32(_ any: Any?, _ what: String) throws -> UInt32 {
        guard let v = UInt32(exactly: try uint64(any, what)) else { throw VectorJSONError("\(what): over 2^32 - 1") }
        return v
    }

    package static func bool(_ any: Any?, _ what: String) throws -> Bool {
        guard let b = any as? Bool else { throw VectorJSONError("\(what): expected true or false") }
        return b
    }

    package static func int64(_ any: Any?, _ what: String) throws -> Int64 {
        guard let s = any as? String, let v = Int64(s) else {
            throw VectorJSONError("\(what): expected a decimal string")
        }
        return v
    }

    package static func uint64(_ any: Any?, _ what: String) throws -> UInt64 {
        guard let s = any as? String, let v = UInt64(s) else {
            throw VectorJSONError("\(what): expected a decimal string")
        }
        return v
    }

    package static func object(_ any: Any?, _ what: String) throws -> [String: Any] {
        guard let o = any as? [String: Any] else { throw VectorJSONError("\(what): expected an object") }
        return o
    }

    package static func array(_ any: Any?, _ what: String) throws -> [Any] {
        guard let a = any as? [Any] else { throw VectorJSONError("\(what): expected an array") }
        return a
    }

    package static func optional(_ any: Any?) -> Any? {
        if any == nil || any is NSNull { return nil }
        return any
    }

    /// A double as text: exact, and able to say NaN, the infinities and −0.0.
    package static func double(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d == .infinity { return "Infinity" }
        if d == -.infinity { return "-Infinity" }
        return d.description
    }

    package static func double(_ any: Any?, _ what: String) throws -> Double {
        let s = try string(any, what)
        switch s {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default:
            guard let d = Double(s), d.isFinite else { throw VectorJSONError("\(what): \(s) is not a double") }
            return d
        }
    }

    // MARK: Identities

    package static func node(_ n: NodeID) -> String { n.hex }

    package static func node(_ any: Any?, _ what: String) throws -> NodeID {
        guard let s = any as? String, s.count == 32, s == s.lowercased(), let n = NodeID(hex: s) else {
            throw VectorJSONError("\(what): expected 32 lowercase hex digits")
        }
        return n
    }

    package static func zone(_ z: RecordZone.ID) -> [String: Any] { ["name": z.name, "owner": z.owner] }

    package static func zone(_ any: Any?, _ what: String) throws -> RecordZone.ID {
        let o = try object(any, what)
        return RecordZone.ID(
            name: try string(o["name"], "\(what).name"), owner: try string(o["owner"], "\(what).owner"))
    }

    package static func recordID(_ id: Record.ID) -> [String: Any] { ["name": id.name, "zone": zone(id.zone)] }

    package static func recordID(_ any: Any?, _ what: String) throws -> Record.ID {
        let o = try object(any, what)
        return Record.ID(name: try string(o["name"], "\(what).name"), zone: try zone(o["zone"], "\(what).zone"))
    }

    package static func dot(_ d: Dot?) -> Any {
        guard let d else { return NSNull() }
        return ["node": node(d.node), "hlc": String(d.hlc.rawValue)]
    }

    package static func dot(_ any: Any?, _ what: String) throws -> Dot? {
        guard let any = optional(any) else { return nil }
        let o = try object(any, what)
        return Dot(node: try node(o["node"], "\(what).node"), hlc: HLC(rawValue: try uint64(o["hlc"], "\(what).hlc")))
    }

    package static func vector(_ v: VersionVector) -> [Any] {
        v.entries.map { ["node": node($0.node), "hlc": String($0.hlc.rawValue)] as [String: Any] }
    }

    /// Entries in the order given (not re-sorted), so an encoder test sees exactly the vector.
    package static func vector(_ any: Any?, _ what: String) throws -> VersionVector {
        var entries = [VersionVector.Entry]()
        for (i, e) in try array(any, what).enumerated() {
            let o = try object(e, "\(what)[\(i)]")
            entries.append(
                .init(
                    node: try node(o["node"], "\(what)[\(i)].node"),
                    hlc: HLC(rawValue: try uint64(o["hlc"], "\(what)[\(i)].hlc"))))
        }
        return VersionVector(sortedEntries: entries)
    }

    package static func heads(_ h: [Record.Head]) -> [Any] {
        h.map { ["node": node($0.node), "deletion": $0.isDeletion] as [String: Any] }
    }

    package static func heads(_ any: Any?, _ what: String) throws -> [Record.Head] {
        try array(any, what).enumerated().map { i, e in
            let o = try object(e, "\(what)[\(i)]")
            return Record.Head(
                node: try node(o["node"], "\(what)[\(i)].node"),
                isDeletion: try bool(o["deletion"], "\(what)[\(i)].deletion"))
        }
    }

    package static func extensions(_ e: [Record.Extension]) -> [Any] {
        e.map { ["tag": String($0.tag), "bytes": hex($0.bytes)] as [String: Any] }
    }

    package static func extensions(_ any: Any?, _ what: String) throws -> [Record.Extension] {
        try array(any, what).enumerated().map { i, e in
            let o = try object(e, "\(what)[\(i)]")
            return Record.Extension(
                tag: try uint64(o["tag"], "\(what)[\(i)].tag"), bytes: try bytes(o["bytes"], "\(what)[\(i)].bytes"))
        }
    }

    // MARK: Field values

    package static func reference(_ r: Reference) -> [String: Any] {
        [
            "record": r.recordID.name, "zone": zone(r.recordID.zone),
            "action": r.action == .deleteSelf ? "deleteSelf" : "none"
        ]
    }

    package static func reference(_ any: Any?, _ what: String) throws -> Reference {
        let o = try object(any, what)
        let action: Reference.Action
        switch try string(o["action"], "\(what).action") {
        case "none": action = .none
        case "deleteSelf": action = .deleteSelf
        case let a: throw VectorJSONError("\(what).action: \(a) is not none or deleteSelf")
        }
        return Reference(
            recordID: Record.ID(
                name: try string(o["record"], "\(what).record"), zone: try zone(o["zone"], "\(what).zone")),
            action: action)
    }

    package static func location(_ l: Location) -> [String: Any] {
        var o: [String: Any] = ["latitude": double(l.latitude), "longitude": double(l.longitude)]
        if let v = l.altitude { o["altitude"] = double(v) }
        if let v = l.horizontalAccuracy { o["horizontalAccuracy"] = double(v) }
        if let v = l.verticalAccuracy { o["verticalAccuracy"] = double(v) }
        if let v = l.course { o["course"] = double(v) }
        if let v = l.speed { o["speed"] = double(v) }
        if let t = l.timestamp { o["timestamp"] = String(t.millisecondsSince1970) }
        return o
    }

    package static func location(_ any: Any?, _ what: String) throws -> Location {
        let o = try object(any, what)
        let known: Set = [
            "latitude", "longitude", "altitude", "horizontalAccuracy", "verticalAccuracy", "course", "speed",
            "timestamp"
        ]
        if let extra = o.keys.first(where: { !known.contains($0) }) {
            throw VectorJSONError("\(what): unknown member \(extra)")
        }
        func opt(_ k: String) throws -> Double? { try optional(o[k]).map { try double($0, "\(what).\(k)") } }
        return Location(
            latitude: try double(o["latitude"], "\(what).latitude"),
            longitude: try double(o["longitude"], "\(what).longitude"),
            altitude: try opt("altitude"), horizontalAccuracy: try opt("horizontalAccuracy"),
            verticalAccuracy: try opt("verticalAccuracy"), course: try opt("course"), speed: try opt("speed"),
            timestamp: try optional(o["timestamp"]).map {
                Timestamp(millisecondsSince1970: try int64($0, "\(what).timestamp"))
            })
    }

    /// The bare JSON of a scalar (no type wrapper): the element form inside lists.
    package static func scalar(_ v: FieldValue) -> Any {
        switch v {
        case .string(let s): return s
        case .int64(let i): return String(i)
        case .double(let d): return double(d)
        case .bool(let b): return b
        case .bytes(let b): return hex(b)
        case .date(let t): return String(t.millisecondsSince1970)
        case .reference(let r): return reference(r)
        case .asset(let a): return ["hash": a.hash.hex, "size": String(a.size)] as [String: Any]
        case .location(let l): return location(l)
        case .list: preconditionFailure("lists are not scalars")
        }
    }

    package static func kind(_ name: String, _ what: String) throws -> FieldValue.Kind {
        guard let k = FieldValue.Kind.allCases.first(where: { $0.description == name }) else {
            throw VectorJSONError("\(what): \(name) is not a value type")
        }
        return k
    }

    package static func scalar(_ any: Any?, kind: FieldValue.Kind, _ what: String) throws -> FieldValue {
        switch kind {
        case .string: return .string(try string(any, what))
        case .int64: return .int64(try int64(any, what))
        case .double: return .double(try double(any, what))
        case .bool: return .bool(try bool(any, what))
        case .bytes: return .bytes(try bytes(any, what))
        case .date: return .date(Timestamp(millisecondsSince1970: try int64(any, what)))
        case .reference: return .reference(try reference(any, what))
        case .asset:
            let o = try object(any, what)
            guard let h = ContentHash(hex: try string(o["hash"], "\(what).hash")) else {
                throw VectorJSONError("\(what).hash: expected 64 hex digits")
            }
            return .asset(Asset(hash: h, size: try int64(o["size"], "\(what).size")))
        case .location: return .location(try location(any, what))
        }
    }

    /// A typed value: `{"type": kind, "value": …}` or `{"type": "list", "of": kind, "value": […]}`.
    package static func value(_ v: FieldValue) -> [String: Any] {
        if case .list(let l) = v {
            return ["type": "list", "of": l.elementKind.description, "value": l.elements.map(scalar)]
        }
        return ["type": v.kind.description, "value": scalar(v)]
    }

    package static func value(_ any: Any?, _ what: String) throws -> FieldValue {
        let o = try object(any, what)
        let type = try string(o["type"], "\(what).type")
        if type == "list" {
            let k = try kind(try string(o["of"], "\(what).of"), "\(what).of")
            let elements = try array(o["value"], "\(what).value").enumerated().map { i, e in
                try scalar(e, kind: k, "\(what).value[\(i)]")
            }
            guard let l = ListValue(elements, kind: k) else { throw VectorJSONError("\(what): mixed list") }
            return .list(l)
        }
        return try scalar(o["value"], kind: try kind(type, "\(what).type"), "\(what).value")
    }

    package static func list(_ any: Any?, _ what: String) throws -> ListValue {
        guard case .list(let l) = try value(any, what) else { throw VectorJSONError("\(what): expected a list value") }
        return l
    }

    // MARK: Records, deltas, tombstones, tokens

    package static func field(_ f: Record.Field) -> [String: Any] {
        ["name": f.name, "value": f.value.map(value) ?? NSNull(), "stamp": dot(f.stamp)]
    }

    package static func field(_ any: Any?, _ what: String) throws -> Record.Field {
        let o = try object(any, what)
        return Record.Field(
            name: try string(o["name"], "\(what).name"),
            value: try optional(o["value"]).map { try value($0, "\(what).value") },
            stamp: try dot(o["stamp"], "\(what).stamp"))
    }

    package static func record(_ r: Record) -> [String: Any] {
        [
            "recordType": r.recordType, "id": recordID(r.id), "parent": r.parent.map(reference) ?? NSNull(),
            "creation": dot(r.creation), "versionVector": vector(r.versionVector), "heads": heads(r.heads),
            "fields": r.fields.map(field), "extensions": extensions(r.extensions)
        ]
    }

    package static func record(_ any: Any?) throws -> Record {
        let o = try object(any, "record")
        return Record(
            recordType: try string(o["recordType"], "recordType"), id: try recordID(o["id"], "id"),
            parent: try optional(o["parent"]).map { try reference($0, "parent") },
            creation: try dot(o["creation"], "creation"),
            versionVector: try vector(o["versionVector"], "versionVector"),
            heads: try heads(o["heads"], "heads"),
            fields: try array(o["fields"], "fields").enumerated().map { i, f in try field(f, "fields[\(i)]") },
            extensions: try extensions(o["extensions"], "extensions"))
    }

    package static func sparse(_ s: SparseRecord) -> [String: Any] {
        var o: [String: Any] = [
            "recordType": s.recordType, "id": recordID(s.id), "parent": s.parent.map(reference) ?? NSNull(),
            "entries": vector(s.entries), "heads": heads(s.heads), "fields": s.fields.map(field),
            "extensions": extensions(s.extensions),
            "digest": Hex.string(withUnsafeBytes(of: s.digest.littleEndian) { Array($0) })
        ]
        // Present only when the item has delta slots.
        if !s.deltas.isEmpty { o["deltas"] = s.deltas.map(fieldDelta) }
        return o
    }

    package static func sparse(_ any: Any?) throws -> SparseRecord {
        let o = try object(any, "sparse record")
        return SparseRecord(
            id: try recordID(o["id"], "id"), recordType: try string(o["recordType"], "recordType"),
            parent: try optional(o["parent"]).map { try reference($0, "parent") },
            entries: try vector(o["entries"], "entries"), heads: try heads(o["heads"], "heads"),
            fields: try array(o["fields"], "fields").enumerated().map { i, f in try field(f, "fields[\(i)]") },
            extensions: try extensions(o["extensions"], "extensions"),
            digest: try digest(o["digest"]),
            deltas: try array(o["deltas"] ?? [Any](), "deltas").enumerated().map { i, d in
                try fieldDelta(d, "deltas[\(i)]")
            })
    }

    /// A delta slot: the operation's JSON form (`op` patch or splice, `name`, `stamp`, `edits`)
    /// plus `base_stamp` and `base_digest` (4 bytes, little-endian, in hex).
    package static func fieldDelta(_ d: SparseRecord.FieldDelta) -> [String: Any] {
        var o: [String: Any]
        switch d.edit {
        case .patch(let edits): o = operation(.patch(name: d.name, stamp: d.stamp, edits: edits))
        case .splice(_, let edits): o = operation(.splice(name: d.name, stamp: d.stamp, edits: edits))
        }
        o["base_stamp"] = dot(d.baseStamp)
        o["base_digest"] = Hex.string(withUnsafeBytes(of: d.baseDigest.littleEndian) { Array($0) })
        return o
    }

    package static func fieldDelta(_ any: Any?, _ what: String) throws -> SparseRecord.FieldDelta {
        let o = try object(any, what)
        guard let baseStamp = try dot(o["base_stamp"], "\(what).base_stamp") else {
            throw VectorJSONError("\(what).base_stamp: a delta slot names its base")
        }
        let digestBytes = try bytes(o["base_digest"], "\(what).base_digest")
        guard digestBytes.count == 4 else {
            throw VectorJSONError("\(what).base_digest is \(digestBytes.count) bytes; it is 4")
        }
        let baseDigest = digestBytes.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        switch try operation(o, what) {
        case .patch(let name, let stamp?, let edits):
            return SparseRecord.FieldDelta(
                name: name, stamp: stamp, baseStamp: baseStamp, baseDigest: baseDigest, edit: .patch(edits))
        case .splice(let name, let stamp?, let edits):
            return SparseRecord.FieldDelta(
                name: name, stamp: stamp, baseStamp: baseStamp, baseDigest: baseDigest,
                edit: .splice(kind: edits.first?.insert.elementKind ?? .string, edits))
        default:
            throw VectorJSONError("\(what): a delta slot is a stamped patch or splice")
        }
    }

    /// A sparse record's digest: 8 bytes, little-endian, in hex.
    package static func digest(_ any: Any?) throws -> UInt64 {
        let bytes = try bytes(any, "digest")
        guard bytes.count == 8 else { throw VectorJSONError("digest is \(bytes.count) bytes; it is 8") }
        return bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    package static func system(_ s: RecordDelta.SystemFields?) -> Any {
        guard let s else { return NSNull() }
        return [
            "recordType": s.recordType, "parent": s.parent.map(reference) ?? NSNull(), "creation": dot(s.creation),
            "versionVector": vector(s.versionVector), "heads": heads(s.heads), "extensions": extensions(s.extensions)
        ]
    }

    package static func system(_ any: Any?) throws -> RecordDelta.SystemFields? {
        guard let any = optional(any) else { return nil }
        let o = try object(any, "system")
        return RecordDelta.SystemFields(
            recordType: try string(o["recordType"], "system.recordType"),
            parent: try optional(o["parent"]).map { try reference($0, "system.parent") },
            creation: try dot(o["creation"], "system.creation"),
            versionVector: try vector(o["versionVector"], "system.versionVector"),
            heads: try heads(o["heads"], "system.heads"),
            extensions: try extensions(o["extensions"], "system.extensions"))
    }

    package static func operation(_ op: RecordDelta.Operation) -> [String: Any] {
        switch op {
        case .set(let f):
            return ["op": "set", "name": f.name, "value": f.value.map(value) ?? NSNull(), "stamp": dot(f.stamp)]
        case .drop(let name):
            return ["op": "drop", "name": name]
        case .splice(let name, let stamp, let edits):
            return [
                "op": "splice", "name": name, "stamp": dot(stamp),
                "edits": edits.map {
                    ["offset": $0.offset, "deleteCount": $0.deleteCount, "insert": value(.list($0.insert))]
                        as [String: Any]
                }
            ]
        case .patch(let name, let stamp, let edits):
            return [
                "op": "patch", "name": name, "stamp": dot(stamp),
                "edits": edits.map {
                    ["offset": $0.offset, "deleteCount": $0.deleteCount, "insert": hex($0.insert)] as [String: Any]
                }
            ]
        }
    }

    package static func operation(_ any: Any?, _ what: String) throws -> RecordDelta.Operation {
        let o = try object(any, what)
        let name = try string(o["name"], "\(what).name")
        switch try string(o["op"], "\(what).op") {
        case "set":
            return .set(
                Record.Field(
                    name: name, value: try optional(o["value"]).map { try value($0, "\(what).value") },
                    stamp: try dot(o["stamp"], "\(what).stamp")))
        case "drop":
            return .drop(name: name)
        case "splice":
            let edits = try array(o["edits"], "\(what).edits").enumerated().map { i, e in
                let eo = try object(e, "\(what).edits[\(i)]")
                return RecordDelta.ListSplice(
                    offset: try int(eo["offset"], "offset"), deleteCount: try int(eo["deleteCount"], "deleteCount"),
                    insert: try list(eo["insert"], "\(what).edits[\(i)].insert"))
            }
            return .splice(name: name, stamp: try dot(o["stamp"], "\(what).stamp"), edits: edits)
        case "patch":
            let edits = try array(o["edits"], "\(what).edits").enumerated().map { i, e in
                let eo = try object(e, "\(what).edits[\(i)]")
                return RecordDelta.BytePatch(
                    offset: try int(eo["offset"], "offset"), deleteCount: try int(eo["deleteCount"], "deleteCount"),
                    insert: try bytes(eo["insert"], "\(what).edits[\(i)].insert"))
            }
            return .patch(name: name, stamp: try dot(o["stamp"], "\(what).stamp"), edits: edits)
        case let op:
            throw VectorJSONError("\(what).op: \(op) is not set, drop, splice or patch")
        }
    }

    package static func delta(_ d: RecordDelta) -> [String: Any] {
        ["baseTag": Int(d.baseTag), "system": system(d.system), "operations": d.operations.map(operation)]
    }

    package static func delta(_ any: Any?) throws -> RecordDelta {
        let o = try object(any, "delta")
        let tag = try int(o["baseTag"], "baseTag")
        guard let baseTag = UInt32(exactly: tag) else {
            throw VectorJSONError("baseTag: \(tag) is not a 32-bit unsigned number")
        }
        return RecordDelta(
            baseTag: baseTag, system: try system(o["system"]),
            operations: try array(o["operations"], "operations").enumerated().map { i, op in
                try operation(op, "operations[\(i)]")
            })
    }

    package static func tombstone(_ t: Tombstone) -> [String: Any] {
        [
            "recordType": t.recordType, "id": recordID(t.id), "versionVector": vector(t.versionVector),
            "deletion": dot(t.deletion)
        ]
    }

    package static func tombstone(_ any: Any?) throws -> Tombstone {
        let o = try object(any, "tombstone")
        guard let deletion = try dot(o["deletion"], "deletion") else { throw VectorJSONError("deletion: required") }
        return Tombstone(
            id: try recordID(o["id"], "id"), recordType: try string(o["recordType"], "recordType"),
            versionVector: try vector(o["versionVector"], "versionVector"), deletion: deletion)
    }

    package static func token(_ c: ChangeToken.Contents) -> [String: Any] {
        [
            "kind": c.kind == .zone ? "zone" : "database", "incarnation": node(c.incarnation),
            "vector": vector(c.vector),
            "cursor": c.cursor.map { ["source": node($0.source), "sequence": String($0.sequence)] as [String: Any] }
                ?? NSNull(),
            "text": ChangeToken(c).description
        ]
    }

    /// The token's contents and its documented text form.
    package static func token(_ any: Any?) throws -> (ChangeToken.Contents, String) {
        let o = try object(any, "token")
        let kind: ChangeToken.Contents.Kind
        switch try string(o["kind"], "kind") {
        case "zone": kind = .zone
        case "database": kind = .database
        case let k: throw VectorJSONError("kind: \(k) is not zone or database")
        }
        var cursor: ChangeToken.Contents.Cursor? = nil
        if let c = optional(o["cursor"]) {
            let co = try object(c, "cursor")
            cursor = .init(
                source: try node(co["source"], "cursor.source"), sequence: try uint64(co["sequence"], "cursor.sequence")
            )
        }
        let contents = ChangeToken.Contents(
            kind: kind, incarnation: try node(o["incarnation"], "incarnation"),
            vector: try vector(o["vector"], "vector"), cursor: cursor)
        return (contents, try string(o["text"], "text"))
    }
}
