// Record+EntrySlots: the slots a write stamped in a version, as its writer-log entry holds them (Spec/authenticated-writes.md §2).

extension Record {
    /// The bytes the slots stamped `dot` take in a writer-log entry, and how many there are:
    /// each a `name`, a length byte and the slot's digest, `digestLength` bytes long for value
    /// bytes (a presence byte, then the canonical value) of the length it is given. Nil when the
    /// names are not in strictly increasing byte order (a version built otherwise; the entry
    /// then sorts its slots). `among`: the slots to look at, in order (``slotIndicesByStamp()``
    /// of this version, for `dot`), rather than all of them.
    ///
    /// The slots are read here rather than through ``fields`` in another module: there, every
    /// call out to size or write a value copies the slot (retains and releases its storage).
    package func entrySlotsSize(stampedBy dot: Dot, among: [Int]? = nil, digestLength: (Int) -> Int) -> (
        size: Int, count: Int
    )? {
        var size = 0
        var count = 0
        var previous = -1
        let s = slots
        let zone = id.zone
        for k in 0..<(among?.count ?? s.count) {
            let i = among?[k] ?? k
            guard s[i].stamp == dot else { continue }
            if previous >= 0, UTF8Order.compare(s[previous].name, s[i].name) >= 0 { return nil }
            previous = i
            size &+= WireSize.string(s[i].name) &+ 1 &+ digestLength(Self.slotValueSize(s[i], zone: zone))
            count &+= 1
        }
        return (size, count)
    }

    /// Writes the slots ``entrySlotsSize(stampedBy:among:digestLength:)`` measures, in order:
    /// each slot's name, then `digest` writes its digest, given the name, the length of the value
    /// bytes and what writes them.
    package func writeEntrySlots(
        stampedBy dot: Dot, among: [Int]? = nil, into w: inout WireWriter,
        digest: (inout WireWriter, String, Int, (inout WireWriter) -> Void) -> Void
    ) {
        let s = slots
        let zone = id.zone
        for k in 0..<(among?.count ?? s.count) {
            let i = among?[k] ?? k
            guard s[i].stamp == dot else { continue }
            w.writeString(s[i].name)
            digest(&w, s[i].name, Self.slotValueSize(s[i], zone: zone)) {
                Self.writeSlotValue(s[i], zone: zone, into: &$0)
            }
        }
    }

    /// The indices of the slots each dot stamped, in order. A receiver rebuilding several
    /// entries from one version looks only at each write's own slots with it, so that a range
    /// naming many writes of one version costs what its slots do, not its items times them.
    package func slotIndicesByStamp() -> [Dot: [Int]] {
        var out = [Dot: [Int]]()
        for i in slots.indices {
            if let d = slots[i].stamp { out[d, default: []].append(i) }
        }
        return out
    }

    /// The length of slot `f`'s value bytes: a presence byte, then the canonical value.
    @inline(__always) static func slotValueSize(_ f: Field, zone: RecordZone.ID) -> Int {
        f.hasValue ? 2 &+ f.valueStorage.payloadSize(zone: zone) : 1
    }

    /// Writes slot `f`'s value bytes (``slotValueSize(_:zone:)``).
    @inline(__always) static func writeSlotValue(_ f: Field, zone: RecordZone.ID, into w: inout WireWriter) {
        if f.hasValue {
            w.writeByte(1)
            w.writeByte(f.valueStorage.tag)
            f.valueStorage.encodePayload(into: &w, zone: zone)
        } else {
            w.writeByte(0)
        }
    }
}
