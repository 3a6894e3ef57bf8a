// ChangeToken: opaque bytes naming how far a reader has followed a zone's (or database's) changes.

/// An opaque position in a change feed: pass the token a fetch returned to the next fetch to get
/// only what changed since.
///
/// Applications treat tokens as opaque bytes (store them, pass them back). Shoal decodes them:
/// a token holds the zone's incarnation (so a token for a deleted and re-created zone is
/// recognised), a version vector of every change the holder has seen, and, mid-way through a
/// paged fetch, a resume cursor. Tokens never expire silently: a token older than the store's
/// tombstone horizon is answered with `changeTokenExpired`.
public struct ChangeToken: Hashable, Sendable, CustomStringConvertible {
    /// The token's bytes.
    public let bytes: [UInt8]

    /// Wraps bytes received from a fetch (no validation until used).
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Parses the text form (``description``); nil if it is not base64url.
    public init?(text: String) {
        guard let b = Base64URL.decode(text) else { return nil }
        bytes = b
    }

    /// The base64url text form, for command lines and logs.
    public var description: String { Base64URL.encode(bytes) }

    /// What a token says, for Shoal itself and for tools that inspect tokens.
    public struct Contents: Hashable, Sendable {
        /// What the token follows.
        public enum Kind: UInt8, Hashable, Sendable {
            /// The changes of one zone.
            case zone = 1
            /// The zones of a database.
            case database = 2
        }

        /// A resume point inside a paged fetch, meaningful only to the node that issued it.
        public struct Cursor: Hashable, Sendable {
            /// The incarnation of the store that issued the cursor.
            public var source: NodeID
            /// That store's change sequence number the next page starts after.
            public var sequence: UInt64
            /// Creates a cursor.
            public init(source: NodeID, sequence: UInt64) {
                self.source = source
                self.sequence = sequence
            }
        }

        /// What the token follows.
        public var kind: Kind
        /// The incarnation of the zone (or database): a new one after deletion and re-creation.
        public var incarnation: NodeID
        /// Every change the holder has seen.
        public var vector: VersionVector
        /// Where a paged fetch resumes, if one is under way.
        public var cursor: Cursor?

        /// Creates token contents.
        public init(kind: Kind, incarnation: NodeID, vector: VersionVector, cursor: Cursor? = nil) {
            self.kind = kind
            self.incarnation = incarnation
            self.vector = vector
            self.cursor = cursor
        }
    }

    /// The token for `contents`.
    public init(_ contents: Contents) {
        bytes = WireWriter.encode(size: contents.encodedSize) { contents.encode(into: &$0) }
    }

    /// Decodes what the token says.
    /// - Throws: ``WireError`` when the bytes are not a valid token.
    public func contents(limits: WireLimits = .default) throws(WireError) -> Contents {
        let result: Result<Contents, WireError> = bytes.withUnsafeBytes { raw in
            var r = WireReader(raw, limits: limits)
            do throws(WireError) {
                let c = try Contents.decode(from: &r)
                try r.expectEnd("the change token")
                return .success(c)
            } catch { return .failure(error) }
        }
        return try result.get()
    }
}

extension ChangeToken.Contents {
    /// Magic "ST" and format version 1.
    static let magic: (UInt8, UInt8, UInt8) = (0x53, 0x54, 0x01)

    var encodedSize: Int {
        var n = 3 + 1 + 16 + WireSize.varint(UInt64(vector.count)) + 24 * vector.count + 1
        if let c = cursor { n += 16 + WireSize.varint(c.sequence) }
        return n
    }

    func encode(into w: inout WireWriter) {
        w.writeByte(Self.magic.0); w.writeByte(Self.magic.1); w.writeByte(Self.magic.2)
        w.writeByte(kind.rawValue)
        w.writeNodeID(incarnation)
        w.writePlainVector(vector)
        if let c = cursor {
            w.writeByte(1)
            w.writeNodeID(c.source)
            w.writeVarint(c.sequence)
        } else {
            w.writeByte(0)
        }
    }

    static func decode(from r: inout WireReader) throws(WireError) -> ChangeToken.Contents {
        let at = r.offset
        let m0 = try r.readByte("token magic"), m1 = try r.readByte("token magic")
        guard m0 == magic.0, m1 == magic.1 else {
            throw WireError(.badMagic, at: at, "a change token starts with \"ST\" (0x53 0x54)")
        }
        let vAt = r.offset
        let version = try r.readByte("token version")
        guard version == magic.2 else {
            throw WireError(.unsupportedVersion, at: vAt, "change token version \(version); this Shoal reads version 1")
        }
        let kAt = r.offset
        guard let kind = Kind(rawValue: try r.readByte("token kind")) else {
            throw WireError(.unknownRequiredTag, at: kAt, "token kind must be 1 (zone) or 2 (database)")
        }
        let incarnation = try r.readNodeID("token incarnation")
        let vector = try r.readPlainVector("token vector")
        let cAt = r.offset
        switch try r.readByte("token cursor flag") {
        case 0: return .init(kind: kind, incarnation: incarnation, vector: vector)
        case 1:
            let source = try r.readNodeID("cursor source")
            let seq = try r.readVarint("cursor sequence")
            return .init(
                kind: kind, incarnation: incarnation, vector: vector, cursor: Cursor(source: source, sequence: seq))
        case let f:
            throw WireError(.invalidValue, at: cAt, "token cursor flag is \(f); it is 0 or 1")
        }
    }
}

extension WireWriter {
    /// A version vector without head states: count, then (node, fixed64 timestamp) per entry.
    package mutating func writePlainVector(_ v: VersionVector) {
        writeVarint(UInt64(v.count))
        for e in v.entries {
            writeNodeID(e.node)
            writeFixed64(e.hlc.rawValue)
        }
    }
}

extension WireSize {
    /// Size of ``WireWriter/writePlainVector(_:)``.
    package static func plainVector(_ v: VersionVector) -> Int { varint(UInt64(v.count)) + 24 * v.count }
}

extension WireReader {
    /// Reads a version vector without head states, checking order, uniqueness and non-zero entries.
    package mutating func readPlainVector(_ what: @autoclosure () -> String) throws(WireError) -> VersionVector {
        let n = try readCount(max: limits.maxVectorEntries, "\(what()) entry count", limitName: "maxVectorEntries")
        try require(n, each: 24, "\(n) \(what()) entries")
        var entries = [VersionVector.Entry]()
        entries.reserveCapacity(n)
        for _ in 0..<n {
            let at = offset
            let node = try readNodeID("\(what()) node")
            if let p = entries.last?.node, node <= p {
                throw WireError(
                    node == p ? .duplicate : .unsorted, at: at,
                    "\(what()) nodes must strictly increase; \(node) follows \(p)")
            }
            let hAt = offset
            let h = try readFixed64("\(what()) timestamp")
            if h == 0 {
                throw WireError(.invalidValue, at: hAt, "\(what()) entry for \(node) is zero; zero entries are omitted")
            }
            entries.append(.init(node: node, hlc: HLC(rawValue: h)))
        }
        return VersionVector(sortedEntries: entries)
    }
}

/// base64url without padding (RFC 4648 §5), for tokens on command lines.
package enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            for s in [18, 12, 6, 0] { out.append(alphabet[Int(v >> UInt32(s) & 63)]) }
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(v >> 18 & 63)]); out.append(alphabet[Int(v >> 12 & 63)])
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            for s in [18, 12, 6] { out.append(alphabet[Int(v >> UInt32(s) & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    package static func decode(_ text: String) -> [UInt8]? {
        var values = [UInt8]()
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(c - 65)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(c - 71)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(c + 4)
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        if values.count % 4 == 1 { return nil }
        var out = [UInt8]()
        var i = 0
        while i < values.count {
            let chunk = values[i..<min(i + 4, values.count)]
            var v: UInt32 = 0
            for (k, x) in chunk.enumerated() { v |= UInt32(x) << UInt32(18 - 6 * k) }
            out.append(UInt8(v >> 16 & 0xFF))
            if chunk.count > 2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if chunk.count > 3 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        // Canonical: unused low bits of the last character must be zero.
        return encode(out) == text ? out : nil
    }
}
