// HeadedVector and StampCoding: a record's version vector with head states, and stamps against it.

/// A record's version vector with each entry's head state: count, then per entry the node
/// (16 bytes), the timestamp (fixed64) and a state byte (0 not a head, 1 save head, 2 delete head).
package enum HeadedVector {
    package static func size(_ vv: VersionVector) -> Int {
        WireSize.varint(UInt64(vv.count)) &+ vv.count &* 25
    }

    package static func write(_ vv: VersionVector, heads: [Record.Head], into w: inout WireWriter) {
        w.writeVarint(UInt64(vv.count))
        var h = 0
        for e in vv.entries {
            w.writeNodeID(e.node)
            w.writeFixed64(e.hlc.rawValue)
            while h < heads.count && heads[h].node < e.node { h &+= 1 }
            if h < heads.count && heads[h].node == e.node {
                w.writeByte(heads[h].isDeletion ? 2 : 1)
            } else {
                w.writeByte(0)
            }
        }
    }

    package static func read(from r: inout WireReader) throws(WireError) -> (VersionVector, [Record.Head]) {
        let vectorAt = r.offset
        let vvCount = try r.readCount(
            max: r.limits.maxVectorEntries, "version vector entry count", limitName: "maxVectorEntries")
        try r.require(vvCount, each: 25, "\(vvCount) version vector entries")
        var entries = [VersionVector.Entry]()
        var heads = [Record.Head]()
        guard vvCount > 0 else { return (VersionVector(), heads) }
        entries.reserveCapacity(vvCount)
        var previous: NodeID? = nil
        for _ in 0..<vvCount {
            let at = r.offset
            let node = try r.readNodeID("version vector node")
            if let p = previous {
                if node == p { throw WireError(.duplicate, at: at, "node \(node) appears twice in the version vector") }
                if node < p {
                    throw WireError(.unsorted, at: at, "version vector nodes must increase; \(node) follows \(p)")
                }
            }
            previous = node
            let hAt = r.offset
            let hlc = try r.readFixed64("version vector timestamp")
            if hlc == 0 {
                throw WireError(
                    .invalidValue, at: hAt, "version vector entry for \(node) is zero; zero entries are omitted")
            }
            let sAt = r.offset
            switch try r.readByte("head state") {
            case 0: break
            case 1: heads.append(Record.Head(node: node, isDeletion: false))
            case 2: heads.append(Record.Head(node: node, isDeletion: true))
            case let s:
                throw WireError(.invalidValue, at: sAt, "head state \(s) is not 0 (none), 1 (save) or 2 (delete)")
            }
            entries.append(VersionVector.Entry(node: node, hlc: HLC(rawValue: hlc)))
        }
        if heads.isEmpty {
            throw WireError(
                .invalidValue, at: vectorAt,
                "a saved record needs at least one head (state 1 or 2) in its version vector")
        }
        return (VersionVector(sortedEntries: entries), heads)
    }
}

/// A stamp is the index of its node in the version vector, then how far its timestamp lies below
/// that node's entry (usually 0: the field was set by the node's newest write).
///
/// A stamp whose node is missing from the vector cannot be encoded faithfully; it is written as
/// index 0, offset 0, and ``Record/validate(limits:)`` rejects such records before they are saved.
package enum StampCoding {
    @inline(__always) static func parts(_ dot: Dot, in vv: VersionVector) -> (Int, UInt64) {
        if let i = vv.index(of: dot.node) {
            let top = vv.entries[i].hlc.rawValue
            return (i, top &- dot.hlc.rawValue)
        }
        return (0, 0)
    }

    package static func size(_ dot: Dot?, in vv: VersionVector) -> Int {
        guard let dot else { return 2 }
        let (i, back) = parts(dot, in: vv)
        return WireSize.varint(UInt64(i)) &+ WireSize.varint(back)
    }

    package static func write(_ dot: Dot?, in vv: VersionVector, into w: inout WireWriter) {
        guard let dot else { w.writeVarint(0); w.writeVarint(0); return }
        let (i, back) = parts(dot, in: vv)
        w.writeVarint(UInt64(i))
        w.writeVarint(back)
    }
}
