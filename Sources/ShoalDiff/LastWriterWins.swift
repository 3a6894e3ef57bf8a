// LastWriterWins: the deterministic total order of field slots that picks a conflict's winner.

public import ShoalWire

/// The last-writer-wins order of two slots of one field, the same on every node.
///
/// A slot ranks above another when its stamp is later by ``ShoalWire/Dot`` order (HLC, then node
/// ID as the tie-break). A slot without a stamp — an edit not yet saved — ranks above every
/// stamped one, since it is being written now. Slots with equal stamps (which a correct history
/// never produces, but a merge must still decide) rank by value: any value above a removed-field
/// marker ("modification beats deletion"), then by type tag, then by canonical payload bytes.
public enum LastWriterWins {
    /// Whether `a` ranks strictly above `b`.
    public static func ranks(_ a: Record.Field, above b: Record.Field, zone: RecordZone.ID) -> Bool {
        compare(a, b, zone: zone) > 0
    }

    /// The higher-ranked of two slots; `a` when they rank equal (then they are equal).
    public static func winner(_ a: Record.Field, _ b: Record.Field, zone: RecordZone.ID) -> Record.Field {
        compare(a, b, zone: zone) >= 0 ? a : b
    }

    /// −1, 0 or 1 as `a` ranks below, equal to or above `b`.
    package static func compare(_ a: Record.Field, _ b: Record.Field, zone: RecordZone.ID) -> Int {
        switch (a.stamp, b.stamp) {
        case let (x?, y?) where x != y: return x < y ? -1 : 1
        case (nil, _?): return 1
        case (_?, nil): return -1
        default: break
        }
        return compare(a.value, b.value, zone: zone)
    }

    /// Orders values: nil lowest, then by type tag, then by canonical payload bytes.
    package static func compare(_ a: FieldValue?, _ b: FieldValue?, zone: RecordZone.ID) -> Int {
        guard let a else { return b == nil ? 0 : -1 }
        guard let b else { return 1 }
        if a == b { return 0 }
        let ta = a.tag, tb = b.tag
        if ta != tb { return ta < tb ? -1 : 1 }
        let x = WireWriter.encode(size: a.payloadSize(zone: zone)) { a.encodePayload(into: &$0, zone: zone) }
        let y = WireWriter.encode(size: b.payloadSize(zone: zone)) { b.encodePayload(into: &$0, zone: zone) }
        if x == y { return 0 }
        return x.lexicographicallyPrecedes(y) ? -1 : 1
    }
}
