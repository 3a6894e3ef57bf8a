// Store+Digest: a zone's content digest — SHA-256 over its live records in ID order.

internal import Crypto
public import ShoalWire

/// A zone's content digest: 32 bytes of SHA-256.
public struct ZoneDigest: Hashable, Sendable, CustomStringConvertible {
    /// The hash.
    public let bytes: [UInt8]
    /// How many live records it covers.
    public let recordCount: Int
    /// Lowercase hex.
    public var description: String { Hex.string(bytes) }
}

extension Store {
    /// The digest of what users see in `zone`: SHA-256 over its live records, in record-name
    /// (UTF-8 byte) order, each as a 4-byte big-endian length then its canonical ShoalWire bytes
    /// (converged system fields included).
    ///
    /// Tombstones are left out, so two nodes with the same content agree even when they purged
    /// tombstones at different times. Nodes that have seen the same changes have equal digests.
    /// - Throws: `zoneNotFound`.
    public func digest(of zone: RecordZone.ID) throws(ShoalError) -> ZoneDigest {
        let z = try liveZone(zone)
        let s = try db.statement("SELECT bytes FROM records WHERE zone = ? AND deleted = 0 ORDER BY name")
        s.bind(1, z.row)
        var h = SHA256()
        var n = 0
        while try s.step() {
            let bytes = s.blob(0)
            let len = UInt32(truncatingIfNeeded: bytes.count)
            h.update(data: [
                UInt8(len >> 24), UInt8(truncatingIfNeeded: len >> 16), UInt8(truncatingIfNeeded: len >> 8),
                UInt8(truncatingIfNeeded: len)
            ])
            h.update(data: bytes)
            n += 1
        }
        return ZoneDigest(bytes: Array(h.finalize()), recordCount: n)
    }
}
