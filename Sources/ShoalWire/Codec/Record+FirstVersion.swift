// Record+FirstVersion: a record as first saved where it is new — every field stamped with one dot.

extension Record {
    /// This record as first saved at `dot` by a store that holds no record of its ID: the fields
    /// that have values, each stamped with `dot` (removal markers are dropped: there is nothing
    /// to remove; of a field's concurrent slots only the first, its value, is kept), `dot` as its creation, `vector` (which must cover `dot`) as its version vector
    /// and `heads` as its heads; the type, ID, parent and extensions are this record's.
    ///
    /// Also returns the size of the version's encoding, worked out from `size` — the size of
    /// this record's own encoding, as ``validatedSize(limits:)`` gives it — and the bytes each
    /// slot's stamp changes, without summing the field values again.
    package func firstVersion(at dot: Dot, vector: VersionVector, heads: [Head], size: Int) -> (
        record: Record, size: Int
    ) {
        var fields = [Field]()
        fields.reserveCapacity(slots.count)
        var delta = 0
        // Concurrent slots are stamped, so a record without a vector (what apps save) has none.
        let mayRepeat = !versionVector.isEmpty
        for i in slots.indices {
            if mayRepeat && i > 0 && UTF8Order.equal(slots[i &- 1].name, slots[i].name) {
                // A concurrent slot after the field's first: a save keeps only the first.
                delta &-= slotSize(slots[i])
                continue
            }
            let old = slots[i].stamp == nil ? 0 : stampSize(slots[i].stamp)
            if let v = slots[i].value {
                fields.append(Field(name: slots[i].name, value: v, stamp: dot))
                delta &-= old
            } else {
                delta &-= WireSize.string(slots[i].name) &+ 1 &+ old
            }
        }
        let version = Record(
            recordType: recordType, id: id, parent: parent, creation: dot, versionVector: vector,
            heads: heads, fields: fields, extensions: extensions)
        let stamped = StampCoding.size(dot, in: vector) &* fields.count
        let n = size &- systemFieldsSize &+ version.systemFieldsSize &+ delta &+ stamped
        assert(n == version.encodedSize, "the size of a first version is worked out as its encoding's")
        return (version, n)
    }
}
