// Store+Ancestors: the versions a row keeps so a conflict has an ancestor — the previous one, and the base.

import ShoalWire

extension Store {
    /// What a write does with the row's `base`: the newest version of the record a peer is known
    /// to hold as well, kept in zones with a conflict resolver so that a conflict still finds the
    /// version both sides started from after several local saves (Spec/store.md §7.1). It is
    /// only a candidate: ``commonAncestor(_:of:_:)`` takes it when both sides of the conflict
    /// descend from it.
    enum BaseUpdate {
        /// Left as it is (zones without a resolver, deletions).
        case unchanged
        /// A local save: the version it replaces becomes the base when the row has none yet (it
        /// came from a peer, or is the version this node wrote first), or when `shared` (a peer
        /// acknowledged knowing it); otherwise the older base stays, since the version replaced
        /// may never have left this node.
        case storedIfShared(Bool)
        /// A peer's version written as it came: the stored version is itself one a peer holds,
        /// so the row needs no separate base.
        case cleared
        /// A peer's version merged with the stored one: that version (its canonical bytes)
        /// is what the peer holds.
        case set(ArraySlice<UInt8>)
    }

    /// The base update of a local save of `old`'s record in `z`: ``BaseUpdate/unchanged`` when
    /// the zone has no resolver here or `old` is a tombstone, else whether a known peer of the
    /// zone acknowledged `old`. `acks`: the zone's acknowledgements, read once per zone by the
    /// caller and passed again.
    func baseUpdate(
        forSaveOver old: Record, in z: ZoneState,
        acks: inout [(peer: NodeID, vector: VersionVector)]?
    ) throws(ShoalError) -> BaseUpdate {
        guard !old.isDeleted, conflicts.resolver(for: z.id) != nil else { return .unchanged }
        if acks == nil { acks = try peerAcknowledgements(of: z) }
        return .storedIfShared(acks?.contains { old.versionVector.isDominated(by: $0.vector) } ?? false)
    }

    /// The base update when a peer's `incoming` version meets the `stored` one and `next` is
    /// written: ``BaseUpdate/unchanged`` without a resolver; ``BaseUpdate/cleared`` when `next`
    /// is `incoming`; else `incoming` itself (`encoded`: its bytes, when known), if live.
    func baseUpdate(writing next: Record, for incoming: Record, encoded: ArraySlice<UInt8>?, in z: ZoneState)
        -> BaseUpdate
    {
        guard conflicts.resolver(for: z.id) != nil else { return .unchanged }
        if next.versionVector == incoming.versionVector { return .cleared }
        return incoming.isDeleted ? .unchanged : .set(encoded ?? incoming.encoded()[...])
    }

    /// The version the row keeps that both `a` and `b` descend from (each one's vector dominates
    /// or equals its vector) and that is live: the base when it qualifies, else the previous
    /// version; nil when neither does.
    ///
    /// The base comes first although the previous version may be newer: a vector that covers
    /// the previous version proves only that the other side saw it when that side is a single
    /// write. A merge that carries this node's own later writes covers it as well, while its
    /// fields may come from a write that never saw it — and a text merge against an ancestor the
    /// other side's text does not descend from would undo this node's edits. The base, by
    /// construction, is a version a peer holds.
    func commonAncestor(_ z: ZoneState, of a: Record, _ b: Record) throws(ShoalError) -> Record? {
        let (previous, base) = try loadKept(z, a.id.name)
        func qualifies(_ r: Record?) -> Record? {
            guard let r, !r.isDeleted, r.versionVector.isDominated(by: a.versionVector),
                r.versionVector.isDominated(by: b.versionVector)
            else { return nil }
            return r
        }
        return qualifies(base) ?? qualifies(previous)
    }
}
