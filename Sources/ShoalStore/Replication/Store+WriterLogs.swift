// Store+WriterLogs: every write this node makes is entered in its log for the zone, in the same transaction (Spec/authenticated-writes.md §2).

package import ShoalWire

extension Store {
    /// Enters `new` in this node's log for its zone when it is a write this node just made: a
    /// version with this node as a head, newer than the log's last entry. Replicated versions
    /// (their writes of this node, if any, are entered already) and merges enter nothing.
    /// Called for every version written, in the writing transaction, so a rollback takes the
    /// entry back with the version.
    func enterOwnWrite(_ new: Record, in z: inout ZoneState) throws(ShoalError) {
        let hlc = new.versionVector[nodeID]
        guard hlc > z.log.hlc, new.heads.contains(where: { $0.node == nodeID }) else { return }
        let entry = WriterLog.entry(of: new, dot: Dot(node: nodeID, hlc: hlc), sequence: z.log.sequence &+ 1)
        try appendEntry(entry, of: nodeID, to: &z.log, zone: z)
    }

    /// Appends `entry`, the next of `writer`'s log for zone `z` whose head is `head`, and moves
    /// the head past it.
    func appendEntry(_ entry: WriteEntry, of writer: NodeID, to head: inout WriterLogHead, zone z: ZoneState) throws(ShoalError) {
        let bytes = entry.encoded()
        let previous = head.chain.isEmpty ? WriterLog.chainStart(zone: z.id, writer: writer) : head.chain
        try writes.insertWriterEntry.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: entry.sequence))
            .bind(4, Bytes.hlcKey(entry.hlc)).bind(5, bytes).runAndRewind()
        head = WriterLogHead(sequence: entry.sequence, hlc: entry.hlc, chain: WriterLog.chain(previous, bytes))
    }

    /// The head of this node's log for `zone`: how many writes it entered, the last one's
    /// timestamp, and the chain value after it (the chain's start for an empty log).
    /// - Throws: `zoneNotFound` for a zone that is not live.
    package func ownLogHead(of zone: RecordZone.ID) throws(ShoalError) -> WriterLogHead {
        let z = try liveZone(zone)
        var head = z.log
        if head.chain.isEmpty { head.chain = WriterLog.chainStart(zone: zone, writer: nodeID) }
        return head
    }

    /// The entries of `writer`'s log for `zone` after sequence `after`, at most `limit`, in
    /// order.
    /// - Throws: `zoneNotFound`; `internalError` for an entry the store cannot read (damaged).
    package func entries(of writer: NodeID, in zone: RecordZone.ID, after: UInt64, limit: Int) throws(ShoalError) -> [WriteEntry] {
        let z = try liveZone(zone)
        let s = try db.cached("SELECT bytes FROM writer_entries WHERE zone = ? AND writer = ? AND seq > ? ORDER BY seq LIMIT ?")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, writer).bind(3, Int64(bitPattern: after)).bind(4, Int64(max(limit, 0)))
        var out = [WriteEntry]()
        while try s.step() { out.append(try Self.decodeEntry(s.blob(0), of: writer, in: zone)) }
        return out
    }

    /// The entry of the write `dot` in `zone`, if its writer's log here holds one.
    /// - Throws: `zoneNotFound`; `internalError` for an entry the store cannot read (damaged).
    package func entry(of dot: Dot, in zone: RecordZone.ID) throws(ShoalError) -> WriteEntry? {
        let z = try liveZone(zone)
        let s = try db.cached("SELECT bytes FROM writer_entries WHERE zone = ? AND writer = ? AND hlc = ?")
        defer { s.reset() }
        s.bind(1, z.row).bind(2, dot.node).bind(3, Bytes.hlcKey(dot.hlc))
        guard try s.step() else { return nil }
        return try Self.decodeEntry(s.blob(0), of: dot.node, in: zone)
    }

    static func decodeEntry(_ bytes: [UInt8], of writer: NodeID, in zone: RecordZone.ID) throws(ShoalError) -> WriteEntry {
        do {
            return try WriteEntry(decoding: bytes)
        } catch {
            throw .internalError("an entry of \(writer)'s log for zone \(zone) is damaged (\(error)); the store is damaged")
        }
    }
}

extension Schema {
    /// Starts this node's log for every zone of a store from before logs (the 8 → 9 step): an
    /// entry for every write of this node the zone's records still show — a head, or a slot's
    /// stamp — in timestamp order, each as the version shows it. A write whose slots were all
    /// replaced since shows nothing and has no entry: nobody can ask for it.
    static func startOwnLogs(_ db: SQLiteDatabase, limits: WireLimits) throws(ShoalError) {
        let meta = try db.statement("SELECT value FROM meta WHERE key = 'node'")
        guard try meta.step(), let node = Bytes.nodeID(meta.blob(0)) else {
            meta.reset()
            return  // a store with no node yet has no writes
        }
        meta.reset()
        let zones = try db.statement("SELECT id, name, owner FROM zones")
        var rows = [(Int64, RecordZone.ID)]()
        while try zones.step() { rows.append((zones.int64(0), RecordZone.ID(name: zones.text(1), owner: zones.text(2)))) }
        zones.reset()
        let read = try db.statement("SELECT name, bytes FROM records WHERE zone = ?")
        let insert = try db.statement("INSERT INTO writer_entries(zone, writer, seq, hlc, bytes) VALUES(?, ?, ?, ?, ?)")
        let head = try db.statement("UPDATE zones SET log_seq = ?, log_hlc = ?, log_chain = ? WHERE id = ?")
        for (row, zone) in rows {
            // Every write of this node its records show, by timestamp: one record per write.
            var writes = [(hlc: HLC, version: Record)]()
            read.bind(1, row)
            while try read.step() {
                let name = read.text(0)
                let version = try read.withBlob(1) { (raw) throws(ShoalError) -> Record in
                    do {
                        return try Record(decoding: raw, limits: limits)
                    } catch {
                        throw .internalError("record \(name) of zone \(zone) could not be read while starting its writer log (\(error)); the store is damaged")
                    }
                }
                var dots = Set<HLC>()
                if version.heads.contains(where: { $0.node == node }) { dots.insert(version.versionVector[node]) }
                for f in version.fields where f.stamp?.node == node { if let h = f.stamp?.hlc { dots.insert(h) } }
                for h in dots { writes.append((h, version)) }
            }
            read.reset()
            writes.sort { $0.hlc < $1.hlc }
            var log = WriterLogHead(chain: WriterLog.chainStart(zone: zone, writer: node))
            for w in writes {
                let dot = Dot(node: node, hlc: w.hlc)
                var entry = WriterLog.entry(of: w.version, dot: dot, sequence: log.sequence &+ 1)
                // Only a head's write set the type and parent the version shows, or deleted it.
                if w.version.versionVector[node] != w.hlc || !w.version.heads.contains(where: { $0.node == node }) {
                    entry.slots.removeAll { $0.name.isEmpty }
                    entry.isDeletion = false
                }
                let bytes = entry.encoded()
                try insert.bind(1, row).bind(2, node).bind(3, Int64(bitPattern: entry.sequence)).bind(4, Bytes.hlcKey(entry.hlc))
                    .bind(5, bytes).runAndRewind()
                log = WriterLogHead(sequence: entry.sequence, hlc: entry.hlc, chain: WriterLog.chain(log.chain, bytes))
            }
            try head.bind(1, Int64(bitPattern: log.sequence)).bind(2, Int64(bitPattern: log.hlc.rawValue)).bind(3, log.sequence == 0 ? [] : log.chain)
                .bind(4, row).runAndRewind()
        }
    }
}
