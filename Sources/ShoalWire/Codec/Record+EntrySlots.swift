// Record+EntrySlots: the slots a write stamped in a version, as its writer-log entry holds them (Spec/authenticated-writes.md §2).

extension Record {
    /// The bytes the slots stamped `dot` take in a writer-log entry, and how many there are.
    /// Each is a `name`, a length byte and the slot's digest. The digest is the slot's value
    /// bytes (a presence byte, then the canonical value) when they are at most
    /// ``WriteEntry/inlineSlotBytes`` long, otherwise ``WriteEntry/digestBytes`` bytes of hash.
    /// Nil when the names are not in strictly increasing byte order (a version built
    /// otherwise; the entry then sorts its slots).
    ///
    /// The slots are read here rather than through ``fields`` in another module: there, every
    /// call out to size or write a value copies the slot (retains and releases its storage).
    package func entrySlotsSize(stampedBy dot: Dot) -> (size: Int, count: Int)? {
        var size = 0
        var count = 0
        var previous = -1
        let s = slots
        let zone = id.zone
        for i in 0..<s.count where s[i].stamp == dot {
            if previous >= 0, UTF8Order.compare(s[previous].name, s[i].name) >= 0 { return nil }
            previous = i
            let valueSize = Self.slotValueSize(s[i], zone: zone)
            size &+= WireSize.string(s[i].name) &+ 1 &+ (valueSize <= WriteEntry.inlineSlotBytes ? valueSize : WriteEntry.digestBytes)
            count &+= 1
        }
        return (size, count)
    }

    /// Writes the slots ``entrySlotsSize(stampedBy:)`` measures, in order. For a slot whose
    /// value bytes are hashed, `digest` is given the slot's name (as a `name`) followed by its
    /// value bytes, and writes the digest's ``WriteEntry/digestBytes`` bytes into the writer.
    package func writeEntrySlots(stampedBy dot: Dot, into w: inout WireWriter,
                                 digest: (UnsafeRawBufferPointer, inout WireWriter) -> Void) {
        let s = slots
        let zone = id.zone
        for i in 0..<s.count where s[i].stamp == dot {
            w.writeString(s[i].name)
            let valueSize = Self.slotValueSize(s[i], zone: zone)
            if valueSize <= WriteEntry.inlineSlotBytes {
                w.writeByte(UInt8(truncatingIfNeeded: valueSize))
                Self.writeSlotValue(s[i], zone: zone, into: &w)
            } else {
                w.writeByte(UInt8(WriteEntry.digestBytes))
                Self.hashSlot(i, of: s, valueSize: valueSize, zone: zone, into: &w, digest)
            }
        }
    }

    /// Hands `digest` slot `i` of `s` as it is hashed: its name, then its value bytes
    /// (`valueSize` of them), from scratch space. Static, so that the closure that fills the
    /// scratch space captures the slots, not a copy of the whole record.
    static func hashSlot(_ i: Int, of s: [Field], valueSize: Int, zone: RecordZone.ID, into w: inout WireWriter,
                         _ digest: (UnsafeRawBufferPointer, inout WireWriter) -> Void) {
        let hashed = WireSize.string(s[i].name) &+ valueSize
        withUnsafeTemporaryAllocation(byteCount: hashed, alignment: 8) { scratch in
            // More than inlineSlotBytes bytes, so there is always a base address.
            guard let base = scratch.baseAddress else { preconditionFailure("a temporary allocation of \(hashed) bytes has no address") }
            var sw = WireWriter(start: base, count: hashed)
            sw.writeString(s[i].name)
            writeSlotValue(s[i], zone: zone, into: &sw)
            precondition(sw.remaining == 0, "ShoalWire size pass and write pass disagree")
            digest(UnsafeRawBufferPointer(start: base, count: hashed), &w)
        }
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
