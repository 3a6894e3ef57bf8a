// CRC32C: the Castagnoli checksum that ends every frame, computed eight bytes at a time.

import CShoalCRC

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI, ext4 and SCTP.
///
/// Every frame ends with the CRC-32C of the bytes before it (Spec/wire-format.md, "Frames").
/// On x86-64 with SSE 4.2 the processor's CRC32 instruction does it, eight bytes per
/// instruction in three independent chains over long inputs (CShoalCRC: 22 GB/s against 8.4 for
/// one chain on 75 kB buffers here); elsewhere a table-driven "slicing by 8" in portable Swift folds eight
/// input bytes per step with eight 256-entry tables. Both give the same result (`CRC32CTests`).
public enum CRC32C {
    /// Whether the processor's CRC32 instruction is used.
    static let usesHardware = shoal_crc32c_hw_available() == 1

    /// The checksum of `bytes`. Pass a previous result as `continuing` to checksum data in pieces.
    ///
    /// `CRC32C.checksum("123456789")` is `0xE3069283` (the standard check value).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        if usesHardware, let p = bytes.baseAddress {
            return ~shoal_crc32c_hw(~previous, p, bytes.count)
        }
        return softwareChecksum(bytes, continuing: previous)
    }

    /// ``checksum(_:continuing:)`` by the portable tables, whatever the processor.
    package static func softwareChecksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        var crc = ~previous
        guard var p = bytes.baseAddress else { return previous }
        var n = bytes.count
        table.withUnsafeBufferPointer { t in
            while n >= 8 {
                let word = UInt64(littleEndian: p.loadUnaligned(as: UInt64.self)) ^ UInt64(crc)
                let lo = UInt32(truncatingIfNeeded: word), hi = UInt32(truncatingIfNeeded: word >> 32)
                crc =
                    t[0x700 | Int(lo & 0xFF)] ^ t[0x600 | Int(lo >> 8 & 0xFF)]
                    ^ t[0x500 | Int(lo >> 16 & 0xFF)] ^ t[0x400 | Int(lo >> 24)]
                    ^ t[0x300 | Int(hi & 0xFF)] ^ t[0x200 | Int(hi >> 8 & 0xFF)]
                    ^ t[0x100 | Int(hi >> 16 & 0xFF)] ^ t[Int(hi >> 24)]
                p += 8
                n &-= 8
            }
            while n > 0 {
                crc = t[Int((crc ^ UInt32(p.load(as: UInt8.self))) & 0xFF)] ^ (crc >> 8)
                p += 1
                n &-= 1
            }
        }
        return ~crc
    }

    /// The checksum of a byte array.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// The checksum of a string's UTF-8 bytes.
    public static func checksum(_ text: String) -> UInt32 {
        checksum(Array(text.utf8))
    }

    /// Eight tables of 256 entries: table k maps a byte to its CRC contribution k bytes earlier.
    static let table: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[i] = c
        }
        for k in 1..<8 {
            for i in 0..<256 {
                let prev = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (prev >> 8) ^ t[Int(prev & 0xFF)]
            }
        }
        return t
    }()
}
