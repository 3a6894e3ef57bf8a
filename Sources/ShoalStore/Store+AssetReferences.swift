// Store+AssetReferences: which zones' live records reference each asset (`asset_refs`), for the
// asset lane's check of who may be served an asset (Spec/replication.md §3.7).

package import ShoalWire
import Synchronization

extension Store {
    /// The live zones holding a live record that references `asset`, sorted by ID: one indexed
    /// read of `asset_refs` (its key starts with the asset), whatever the number of records.
    ///
    /// A record references an asset through an asset field or a list of assets, in any of a
    /// field's slots (concurrent slots of a merge included); a tombstone references nothing.
    /// - Throws: `internalError` if SQLite fails.
    package func zones(referencing asset: Asset) throws(ShoalError) -> [RecordZone.ID] {
        let s = try db.cached("SELECT DISTINCT zone FROM asset_refs WHERE hash = ? AND size = ?")
        defer { s.reset() }  // a statement left on a row would pin this connection's read snapshot
        s.bind(1, asset.hash.bytes).bind(2, asset.size)
        var rows = Set<Int64>()
        while try s.step() { rows.insert(s.int64(0)) }
        guard !rows.isEmpty else { return [] }
        return zones.values.filter { !$0.deleted && rows.contains($0.row) }.map(\.id).sorted()
    }

    /// How many times a write has removed a row of `asset_refs` (a record that stopped
    /// referencing an asset: changed, deleted, or its zone deleted) since the store opened.
    ///
    /// Read without the actor, so a caller that remembers what ``zones(referencing:)`` said can
    /// tell, without waiting for the store, that no reference has gone since: additions only ever
    /// allow more, so an unchanged count means the answer still holds (or allows more).
    package nonisolated var assetReferenceRemovals: UInt64 { assetReferenceRemovalCount.load(ordering: .acquiring) }

    /// The assets `r` references while live: every asset field and list of assets, in every slot.
    static func assetReferences(_ r: Record) -> Set<Asset> {
        if r.isDeleted { return [] }
        var out = Set<Asset>()
        for f in r.fields {
            switch f.value {
            case .asset(let a)?: out.insert(a)
            case .list(.asset(let list))?: out.formUnion(list)
            default: break
            }
        }
        return out
    }

    /// Keeps `asset_refs` in step with `new`, the version of its record written over `old` (nil:
    /// a record new to the store) in zone `z`.
    func noteAssetReferences(_ new: Record, over old: Record?, in z: ZoneState) throws(ShoalError) {
        let was = old.map(Self.assetReferences) ?? []
        let now = Self.assetReferences(new)
        guard was != now else { return }
        let name = new.id.name
        let gone = was.subtracting(now)
        if !gone.isEmpty {
            let del = try db.cached("DELETE FROM asset_refs WHERE hash = ? AND size = ? AND zone = ? AND name = ?")
            for a in gone {
                try del.bind(1, a.hash.bytes).bind(2, a.size).bind(3, z.row).bind(4, name).runAndRewind()
            }
            noteAssetReferenceRemoval()
        }
        let add = try db.cached("INSERT OR IGNORE INTO asset_refs(hash, size, zone, name) VALUES(?, ?, ?, ?)")
        for a in now.subtracting(was) {
            try add.bind(1, a.hash.bytes).bind(2, a.size).bind(3, z.row).bind(4, name).runAndRewind()
        }
    }

    /// Counts a removal from `asset_refs` (``assetReferenceRemovals``).
    func noteAssetReferenceRemoval() {
        _ = assetReferenceRemovalCount.wrappingAdd(1, ordering: .releasing)
    }
}

extension Schema {
    /// Which live records reference which assets (version 7), keyed by asset so that finding the
    /// zones of one asset is a range read.
    static let assetRefsTable = """
        CREATE TABLE IF NOT EXISTS asset_refs(
            hash BLOB NOT NULL, size INTEGER NOT NULL, zone INTEGER NOT NULL, name TEXT NOT NULL,
            PRIMARY KEY(hash, size, zone, name)) WITHOUT ROWID
        """

    /// Fills `asset_refs` from the live records stored (the 6 → 7 step): each is decoded once
    /// with `limits` (the store's, which its rows were written under).
    static func fillAssetRefs(_ db: SQLiteDatabase, limits: WireLimits) throws(ShoalError) {
        let read = try db.statement("SELECT zone, name, bytes FROM records WHERE deleted = 0")
        defer { read.reset() }
        let add = try db.statement("INSERT OR IGNORE INTO asset_refs(hash, size, zone, name) VALUES(?, ?, ?, ?)")
        while try read.step() {
            // A row that does not decode (damage) lists nothing: its assets are served to nobody
            // until the record is written again, and reading it fails as it did before.
            let assets = read.withBlob(2) { raw in
                (try? Record(decoding: raw, limits: limits)).map(Store.assetReferences) ?? []
            }
            guard !assets.isEmpty else { continue }
            let zone = read.int64(0), name = read.text(1)
            for a in assets {
                try add.bind(1, a.hash.bytes).bind(2, a.size).bind(3, zone).bind(4, name).runAndRewind()
            }
        }
    }
}
