// SubscriptionCoding: subscriptions persisted as canonical ShoalWire records (no new format).

import ShoalWire

/// Encodes a subscription — and its predicate tree — as ShoalWire records, so persistence reuses
/// the canonical codec, and a damaged row decodes to a typed error, never a trap.
enum SubscriptionCoding {
    static let zone = RecordZone.ID(name: "_subscriptions")

    static func encode(_ s: Subscription) -> [UInt8] {
        var r = Record(recordType: "Subscription", id: Record.ID(name: s.id.isEmpty ? "_" : s.id, zone: zone))
        switch s.kind {
        case let .query(q, z):
            r["kind"] = .int64(0)
            r["zoneName"] = .string(z.name); r["zoneOwner"] = .string(z.owner)
            r["recordType"] = .string(q.recordType)
            r["predicate"] = .bytes(encode(q.predicate))
        case let .zone(z):
            r["kind"] = .int64(1)
            r["zoneName"] = .string(z.name); r["zoneOwner"] = .string(z.owner)
        case let .database(scope):
            r["kind"] = .int64(2)
            if let scope { r["scope"] = .int64(Int64(scope.rawValue)) }
        }
        return r.encoded()
    }

    static func encode(_ p: Predicate) -> [UInt8] {
        var r = Record(recordType: "P", id: Record.ID(name: "p", zone: zone))
        func children(_ ps: [Predicate]) { r["c"] = .list(.bytes(ps.map(encode))) }
        switch p {
        case .all: r["op"] = .int64(0)
        case let .compare(f, op, v):
            r["op"] = .int64(1); r["f"] = .string(f); r["cmp"] = .int64(Int64(op.rawValue)); r["v0"] = v
        case let .between(f, lo, hi): r["op"] = .int64(2); r["f"] = .string(f); r["v0"] = lo; r["v1"] = hi
        case let .isIn(f, vs):
            r["op"] = .int64(3); r["f"] = .string(f); r["n"] = .int64(Int64(vs.count))
            for (i, v) in vs.enumerated() { r["v\(i)"] = v }
        case let .beginsWith(f, prefix): r["op"] = .int64(4); r["f"] = .string(f); r["v0"] = .string(prefix)
        case let .contains(f, v): r["op"] = .int64(5); r["f"] = .string(f); r["v0"] = v
        case .and(let ps): r["op"] = .int64(6); children(ps)
        case .not(let q): r["op"] = .int64(7); children([q])
        }
        return r.encoded()
    }

    struct Damaged: Error {}

    static func decode(_ bytes: [UInt8]) throws(ShoalError) -> Subscription {
        guard let r = try? Record(decoding: bytes), case .int64(let kind)? = r["kind"] else {
            throw .internalError(
                "a stored subscription does not decode; the store is damaged — delete and save the subscription again")
        }
        func zoneID() throws(ShoalError) -> RecordZone.ID {
            guard case .string(let n)? = r["zoneName"], case .string(let o)? = r["zoneOwner"] else {
                throw .internalError("stored subscription \(r.id.name) has no zone; the store is damaged")
            }
            return RecordZone.ID(name: n, owner: o)
        }
        switch kind {
        case 0:
            guard case .string(let t)? = r["recordType"], case .bytes(let pb)? = r["predicate"],
                let p = try? decodePredicate(pb, depth: 0)
            else {
                throw .internalError("stored subscription \(r.id.name) has a damaged query; delete and save it again")
            }
            return Subscription(id: r.id.name, kind: .query(Query(recordType: t, predicate: p), zone: try zoneID()))
        case 1:
            return Subscription(id: r.id.name, kind: .zone(try zoneID()))
        case 2:
            var scope: DatabaseScope? = nil
            if case .int64(let s)? = r["scope"] { scope = DatabaseScope(rawValue: UInt8(truncatingIfNeeded: s)) }
            return Subscription(id: r.id.name, kind: .database(scope))
        default:
            throw .internalError(
                "stored subscription \(r.id.name) has unknown kind \(kind); it was written by a newer Shoal")
        }
    }

    static func decodePredicate(_ bytes: [UInt8], depth: Int) throws -> Predicate {
        guard depth < 64 else { throw Damaged() }
        let r = try Record(decoding: bytes)
        guard case .int64(let op)? = r["op"] else { throw Damaged() }
        func field() throws -> String {
            guard case .string(let f)? = r["f"] else { throw Damaged() }
            return f
        }
        func value(_ i: Int) throws -> FieldValue {
            guard let v = r["v\(i)"] else { throw Damaged() }
            return v
        }
        func children() throws -> [Predicate] {
            guard case .list(.bytes(let cs))? = r["c"] else { throw Damaged() }
            return try cs.map { try decodePredicate($0, depth: depth + 1) }
        }
        switch op {
        case 0: return .all
        case 1:
            guard case .int64(let c)? = r["cmp"], let cmp = Predicate.Comparison(rawValue: UInt8(truncatingIfNeeded: c))
            else { throw Damaged() }
            return .compare(try field(), cmp, try value(0))
        case 2: return .between(try field(), try value(0), try value(1))
        case 3:
            guard case .int64(let n)? = r["n"], n >= 0, n <= 1024 else { throw Damaged() }
            return .isIn(try field(), try (0..<Int(n)).map(value))
        case 4:
            guard case .string(let p) = try value(0) else { throw Damaged() }
            return .beginsWith(try field(), p)
        case 5: return .contains(try field(), try value(0))
        case 6: return .and(try children())
        case 7:
            guard let c = try children().first else { throw Damaged() }
            return .not(c)
        default: throw Damaged()
        }
    }
}

extension Subscription {
    static func loadAll(_ db: SQLiteDatabase) throws(ShoalError) -> [String: Subscription] {
        let s = try db.statement("SELECT bytes FROM subscriptions")
        var out = [String: Subscription]()
        while try s.step() {
            let sub = try SubscriptionCoding.decode(s.blob(0))
            out[sub.id] = sub
        }
        return out
    }
}
