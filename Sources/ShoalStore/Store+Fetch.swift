// Store+Fetch: reading records by ID (with desired keys) and listing a zone's record IDs.

public import ShoalWire

extension Store {
    /// Fetches records by ID.
    /// - Parameters:
    ///   - ids: the records to fetch.
    ///   - desiredKeys: when given, only these fields are returned (system fields always are); a
    ///     record fetched this way can still be saved with `.ifServerRecordUnchanged` or `.changedKeys`.
    /// - Returns: for each ID, the record or its error (`unknownItem` when missing or deleted,
    ///   `zoneNotFound`, `internalError` for a damaged row).
    public func records(for ids: [Record.ID], desiredKeys: [String]? = nil) -> [Record.ID: Result<Record, ShoalError>] {
        var out = [Record.ID: Result<Record, ShoalError>]()
        for id in ids {
            do throws(ShoalError) {
                let z = try liveZone(id.zone)
                guard let s = try loadStored(z, id.name)?.record, !s.isDeleted else { throw .unknownItem(id) }
                out[id] = .success(Self.project(s, desiredKeys))
            } catch {
                out[id] = .failure(error)
            }
        }
        return out
    }

    /// Fetches one record.
    /// - Throws: `unknownItem` when it does not exist or was deleted; `zoneNotFound`; `internalError`.
    public func record(for id: Record.ID, desiredKeys: [String]? = nil) throws(ShoalError) -> Record {
        guard let r = records(for: [id], desiredKeys: desiredKeys)[id] else { throw .unknownItem(id) }
        return try r.get()
    }

    /// The IDs of every live record of `zone`, sorted. After `changeTokenExpired`, compare this with
    /// the records you hold: any you hold that is not listed was deleted.
    /// - Throws: `zoneNotFound`.
    public func allRecordIDs(in zone: RecordZone.ID) throws(ShoalError) -> [Record.ID] {
        let z = try liveZone(zone)
        let s = try db.statement("SELECT name FROM records WHERE zone = ? AND deleted = 0 ORDER BY name")
        s.bind(1, z.row)
        var out = [Record.ID]()
        while try s.step() { out.append(Record.ID(name: s.text(0), zone: zone)) }
        return out
    }

    /// `r` with only `keys` among its field slots (all when nil).
    static func project(_ r: Record, _ keys: [String]?) -> Record {
        guard let keys else { return r }
        let wanted = Set(keys)
        return Record(
            recordType: r.recordType, id: r.id, parent: r.parent, creation: r.creation, versionVector: r.versionVector,
            heads: r.heads, fields: r.fields.filter { wanted.contains($0.name) }, extensions: r.extensions)
    }
}
