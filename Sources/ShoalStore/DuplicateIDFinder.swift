// DuplicateIDFinder: the first record ID a modify request names twice, found by hashing names.

package import ShoalWire

/// Finds the first record ID that a request names a second time (saves first, then deletions).
///
/// An open-addressed table of the request's positions, keyed by a 64-bit FNV-1a hash of each
/// ID's name bytes: the IDs of one request nearly always share a zone, so hashing the zone as
/// well would only cost time, and equal hashes are told apart by comparing the IDs themselves.
/// (A `Set<Record.ID>` ran SipHash over three strings and stored a copy of every ID: 4 % of a
/// bulk save's time on the store's thread.)
package enum DuplicateIDFinder {
    /// The first ID of `saving` then `deleting` that an earlier item also names, if any.
    package static func firstDuplicate(saving: [Record], deleting: [Record.ID]) -> Record.ID? {
        let count = saving.count + deleting.count
        if count < 2 { return nil }
        var capacity = 16
        while capacity < 2 * count { capacity <<= 1 }
        let mask = capacity - 1
        var hashes = [UInt64](repeating: 0, count: capacity)
        var positions = [Int32](repeating: -1, count: capacity)
        return saving.withUnsafeBufferPointer { saves -> Record.ID? in
            func id(_ p: Int) -> Record.ID { p < saves.count ? saves[p].id : deleting[p - saves.count] }
            for p in 0..<count {
                let h = hash(p < saves.count ? saves[p].id.name : deleting[p - saves.count].name)
                var slot = Int(truncatingIfNeeded: h) & mask
                while positions[slot] >= 0 {
                    if hashes[slot] == h && id(Int(positions[slot])) == id(p) { return id(p) }
                    slot = (slot &+ 1) & mask
                }
                hashes[slot] = h
                positions[slot] = Int32(p)
            }
            return nil
        }
    }

    /// 64-bit FNV-1a of the UTF-8 bytes of `name`.
    private static func hash(_ name: String) -> UInt64 {
        var name = name
        return name.withUTF8 { bytes in
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            return h
        }
    }
}
