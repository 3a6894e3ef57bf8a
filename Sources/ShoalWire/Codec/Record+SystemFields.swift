// Record+SystemFields: a record's identity and version without its fields, for apps that cache records.

extension Record {
    /// The record's system fields as bytes, without its fields: CloudKit's `encodeSystemFields`.
    ///
    /// The bytes are the canonical record encoding (Spec/wire-format.md §6.6) of a copy of this
    /// record with no field slots: record type, ID, headed version vector, creation stamp, parent
    /// and extensions, and a field count of zero. Apps that keep records in their own database
    /// store these bytes beside their own columns and rebuild the record with
    /// ``init(systemFields:limits:)``; the rebuilt record has the same ``changeTag``, so a save
    /// with `SavePolicy.ifServerRecordUnchanged` succeeds exactly when nobody changed the record
    /// since, and the fields set on it are the ones saved.
    public func encodedSystemFields() -> [UInt8] {
        Record(
            recordType: recordType, id: id, parent: parent, creation: creation, versionVector: versionVector,
            heads: heads, fields: [], extensions: extensions
        ).encoded()
    }

    /// Rebuilds a record with no fields from ``encodedSystemFields()``.
    ///
    /// - Throws: ``WireError`` when `bytes` are not one canonical record encoding
    ///   (Spec/wire-format.md §6.6) under `limits` — `trailingBytes` when bytes follow it,
    ///   `invalidValue` when it holds fields or removed-field markers (those are not system
    ///   fields), or any code ``validate(limits:)`` gives for inconsistent system fields.
    public init(systemFields bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        let record = try Record(decoding: bytes, limits: limits)
        guard record.fields.isEmpty else {
            throw WireError(
                .invalidValue, at: 0,
                "system fields hold no fields, but these bytes hold a record with \(record.fields.count); encode them with Record.encodedSystemFields()"
            )
        }
        try record.validate(limits: limits)
        self = record
    }
}
