// DeviceID+Text: the checksummed base32 text form of device IDs (Spec/security.md "Device IDs").

extension DeviceID {
    /// The text form: the RFC 4648 base32 of the 32 bytes (52 characters, no padding) in four
    /// runs of 13, each followed by a Luhn mod 32 check character, shown as 8 groups of 7 joined
    /// by `-` (Spec/security.md "Device IDs"). The same form as Syncthing's device IDs.
    public var text: String {
        let data = DeviceIDText.base32(bytes)
        var chars = [UInt8]()
        chars.reserveCapacity(DeviceIDText.characterCount)
        for run in 0..<DeviceIDText.runs {
            let values = data[run * DeviceIDText.runLength..<(run + 1) * DeviceIDText.runLength]
            for v in values { chars.append(DeviceIDText.alphabet[Int(v)]) }
            chars.append(DeviceIDText.alphabet[Int(DeviceIDText.check(values))])
        }
        var out = [UInt8]()
        out.reserveCapacity(DeviceIDText.characterCount + 7)
        for (i, c) in chars.enumerated() {
            if i > 0 && i % DeviceIDText.groupLength == 0 { out.append(UInt8(ascii: "-")) }
            out.append(c)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses the text form. Lower case is accepted; `-` and spaces are ignored wherever they are.
    ///
    /// - Throws: ``WireError`` `invalidValue`, with the byte offset in `text` and a detail naming
    ///   the problem: a character outside A–Z and 2–7; not 56 characters; a check character that
    ///   does not match its run (naming the two groups); or a last data character that sets bits
    ///   beyond the 256 of an ID (only one text form per ID is accepted).
    public init(text: some StringProtocol) throws(WireError) {
        var values = [UInt8]()
        var offsets = [Int]()
        values.reserveCapacity(DeviceIDText.characterCount + 1)
        offsets.reserveCapacity(DeviceIDText.characterCount + 1)
        var count = 0
        var offset = 0
        for c in text.utf8 {
            defer { offset += 1 }
            if c == UInt8(ascii: "-") || c == UInt8(ascii: " ") { continue }
            guard let v = DeviceIDText.value(of: c) else { throw DeviceIDText.badCharacter(in: text, at: offset) }
            if values.count <= DeviceIDText.characterCount {
                values.append(v)
                offsets.append(offset)
            }
            count += 1
        }
        guard count == DeviceIDText.characterCount else {
            var detail =
                "a device ID has \(DeviceIDText.characterCount) characters (8 groups of 7; dashes and spaces are ignored), not \(count)"
            if count == DeviceIDText.runs * DeviceIDText.runLength {
                detail += "; 52 is the form without check characters, which is not accepted"
            }
            throw WireError(
                .invalidValue, at: count > DeviceIDText.characterCount ? offsets[DeviceIDText.characterCount] : offset,
                detail)
        }
        var data = [UInt8]()
        data.reserveCapacity(DeviceIDText.runs * DeviceIDText.runLength)
        for run in 0..<DeviceIDText.runs {
            let start = run * (DeviceIDText.runLength + 1)
            let run13 = values[start..<start + DeviceIDText.runLength]
            let checkIndex = start + DeviceIDText.runLength
            guard values[checkIndex] == DeviceIDText.check(run13) else {
                throw WireError(
                    .invalidValue, at: offsets[checkIndex],
                    "the check character of groups \(2 * run + 1)–\(2 * run + 2) (characters \(start + 1)–\(checkIndex + 1)) does not match them: one of those characters is mistyped"
                )
            }
            data.append(contentsOf: run13)
        }
        guard let bytes = DeviceIDText.bytes(fromBase32: data) else {
            let last = DeviceIDText.characterCount - 2
            throw WireError(
                .invalidValue, at: offsets[last],
                "the last data character '\(Character(Unicode.Scalar(DeviceIDText.alphabet[Int(values[last])])))' sets bits beyond the 256 of a device ID: it must be A or Q"
            )
        }
        self.bytes = bytes
    }
}

/// The pieces of the text form: alphabet, base32, Luhn mod 32.
package enum DeviceIDText {
    /// RFC 4648 base32: value 0–25 is A–Z, 26–31 is 2–7.
    package static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
    /// Base32 characters per check character.
    package static let runLength = 13
    /// Runs of 13 (each with its check character).
    package static let runs = 4
    /// Characters in the text form without separators: 4 × (13 + 1).
    package static let characterCount = 56
    /// Characters per displayed group.
    package static let groupLength = 7

    /// The value of a base32 character (either case), nil for anything else.
    package static func value(of c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c &- UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c &- UInt8(ascii: "a")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): return c &- UInt8(ascii: "2") &+ 26
        default: return nil
        }
    }

    /// The Luhn mod 32 check value of `values` (each 0–31), as Syncthing computes it: from the
    /// left, factors 1, 2, 1, 2, …; each product folded to `p / 32 + p % 32`; the check value is
    /// `(32 − sum mod 32) mod 32`.
    package static func check(_ values: some Collection<UInt8>) -> UInt8 {
        var factor = 1
        var sum = 0
        for v in values {
            let product = factor * Int(v)
            sum += product / 32 + product % 32
            factor = 3 - factor
        }
        return UInt8((32 - sum % 32) % 32)
    }

    /// Base32 values (0–31) of `bytes`, the last one padded with zero bits.
    package static func base32(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for b in bytes {
            buffer = buffer &<< 8 | UInt32(b)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(UInt8(truncatingIfNeeded: buffer &>> UInt32(bits)) & 31)
            }
        }
        if bits > 0 { out.append(UInt8(truncatingIfNeeded: buffer &<< UInt32(5 - bits)) & 31) }
        return out
    }

    /// The bytes of base32 values; nil when the bits left over after the last whole byte are not zero.
    package static func bytes(fromBase32 values: [UInt8]) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(values.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for v in values {
            buffer = buffer &<< 5 | UInt32(v & 31)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer &>> UInt32(bits)))
            }
        }
        guard buffer & ((1 &<< UInt32(bits)) &- 1) == 0 else { return nil }
        return out
    }

    /// The error for the character starting at byte `offset` of `text`.
    static func badCharacter(in text: some StringProtocol, at offset: Int) -> WireError {
        let scalar = String(decoding: text.utf8.dropFirst(offset).prefix(4), as: UTF8.self).unicodeScalars.first
        let shown = scalar.map { $0.escaped(asASCII: true) } ?? "?"
        var detail =
            "'\(shown)' is not a device ID character: they are A–Z and 2–7 (either case; dashes and spaces are ignored)"
        if let s = scalar, "0189".unicodeScalars.contains(s) { detail += "; the digits 0, 1, 8 and 9 never appear" }
        return WireError(.invalidValue, at: offset, detail)
    }
}
