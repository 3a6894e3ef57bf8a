// DiscoveryAnnouncement: the UDP packet a node multicasts on its LAN — "device D listens here".

/// A local discovery packet (Spec/discovery.md §2): the announcing device, an instance number
/// that changes when its node restarts, and where it accepts connections.
///
/// Layout: magic `73 68 64 61` ("shda"), version byte `01`, device ID (32 bytes), instance
/// (fixed64), endpoint count (varint, 1–``maxEndpoints``), then each endpoint: kind byte (`00`
/// the packet's source address, `04` IPv4, `06` IPv6), the address (0, 4 or 16 bytes, network
/// order) and the port (varint, 1–65535). Endpoints are strictly increasing (kind, address,
/// port). A whole packet is at most ``maxBytes``.
///
/// An announcement carries nothing secret and proves nothing: it only suggests an address to
/// dial, and mutual TLS then decides who answers there (Spec/discovery.md §5).
public struct DiscoveryAnnouncement: Hashable, Sendable {
    /// The first four bytes of every announcement, "shda" (Spec/discovery.md §2.1).
    public static let magic: [UInt8] = [0x73, 0x68, 0x64, 0x61]
    /// The format version this decoder reads and this encoder writes.
    public static let version: UInt8 = 1
    /// The largest announcement, in bytes: larger packets are refused before any other check.
    public static let maxBytes = 1_024
    /// The most endpoints one announcement may list.
    public static let maxEndpoints = 16

    /// The announcing device.
    public var device: DeviceID
    /// A number the node picks at random each time it starts, so a restart is noticed.
    public var instance: UInt64
    /// Where the device accepts connections; sorted and unique, 1–``maxEndpoints`` of them.
    public var endpoints: [Endpoint]

    /// Creates an announcement; ``encoded()`` sorts the endpoints and drops duplicates.
    public init(device: DeviceID, instance: UInt64, endpoints: [Endpoint]) {
        self.device = device
        self.instance = instance
        self.endpoints = endpoints
    }

    /// One place the device accepts connections.
    public struct Endpoint: Hashable, Comparable, Sendable, CustomStringConvertible {
        /// The address part of an endpoint.
        public enum Host: Hashable, Sendable {
            /// Whatever address the packet came from (a node listening on every address says this).
            case source
            /// An IPv4 address, as a 32-bit number in network order (`10.0.0.1` is `0x0A00_0001`).
            case ipv4(UInt32)
            /// An IPv6 address, as its high and low 64 bits.
            case ipv6(high: UInt64, low: UInt64)

            /// The kind byte on the wire.
            var kind: UInt8 {
                switch self {
                case .source: 0
                case .ipv4: 4
                case .ipv6: 6
                }
            }
        }

        /// The address.
        public var host: Host
        /// The TCP port, 1–65535.
        public var port: UInt16

        /// Creates an endpoint.
        public init(host: Host, port: UInt16) {
            self.host = host
            self.port = port
        }

        /// Endpoints order by kind, then address, then port: the canonical order on the wire.
        public static func < (a: Endpoint, b: Endpoint) -> Bool {
            (a.host.kind, a.host.sortKey.0, a.host.sortKey.1, a.port) < (
                b.host.kind, b.host.sortKey.0, b.host.sortKey.1, b.port
            )
        }

        /// `source:7400`, `10.0.0.1:7400` or `[fe80::1]:7400`.
        public var description: String {
            switch host {
            case .source: "source:\(port)"
            case .ipv4: "\(host.text):\(port)"
            case .ipv6: "[\(host.text)]:\(port)"
            }
        }
    }

    /// The canonical bytes: endpoints sorted, duplicates dropped, at most ``maxEndpoints`` kept.
    /// Give at least one endpoint and ports 1–65535, or the bytes will not decode.
    public func encoded() -> [UInt8] {
        let list = Array(Set(endpoints)).sorted().prefix(Self.maxEndpoints)
        var size = 4 &+ 1 &+ DeviceID.byteCount &+ 8 &+ WireSize.varint(UInt64(list.count))
        for e in list { size &+= 1 &+ e.host.addressBytes &+ WireSize.varint(UInt64(e.port)) }
        return WireWriter.encode(size: size) { w in
            for b in Self.magic { w.writeByte(b) }
            w.writeByte(Self.version)
            for b in device.bytes { w.writeByte(b) }
            w.writeFixed64(instance)
            w.writeVarint(UInt64(list.count))
            for e in list {
                w.writeByte(e.host.kind)
                switch e.host {
                case .source: break
                case .ipv4(let a):
                    for shift in stride(from: 24, through: 0, by: -8) {
                        w.writeByte(UInt8(truncatingIfNeeded: a >> UInt32(shift)))
                    }
                case let .ipv6(high, low):
                    for half in [high, low] {
                        for shift in stride(from: 56, through: 0, by: -8) {
                            w.writeByte(UInt8(truncatingIfNeeded: half >> UInt64(shift)))
                        }
                    }
                }
                w.writeVarint(UInt64(e.port))
            }
        }
    }

    /// Decodes an announcement.
    /// - Throws: ``WireError``: `limit_exceeded` for more than ``maxBytes`` bytes or more than
    ///   ``maxEndpoints`` endpoints, `bad_magic`, `unsupported_version`, `truncated`,
    ///   `invalid_value` (no endpoints, an unknown kind, an unspecified address, port 0 or above
    ///   65535), `unsorted` / `duplicate` endpoints, `overlong_varint`, `trailing_bytes`.
    public init(decoding bytes: [UInt8]) throws(WireError) {
        // Checked first, so a big datagram costs no parsing at all.
        guard bytes.count <= Self.maxBytes else {
            throw WireError(
                .limitExceeded, at: Self.maxBytes,
                "an announcement is at most \(Self.maxBytes) bytes, this one is \(bytes.count) (DiscoveryAnnouncement.maxBytes)"
            )
        }
        self = try ControlPayload.decode(bytes, limits: .default, "the announcement") {
            (r) throws(WireError) -> DiscoveryAnnouncement in
            let magic = try r.readRaw(4, "the magic \"shda\"")
            guard magic.elementsEqual(Self.magic) else {
                throw WireError(.badMagic, at: 0, "an announcement starts with 73 68 64 61 (\"shda\")")
            }
            let vAt = r.offset
            let version = try r.readByte("the version")
            guard version == Self.version else {
                throw WireError(
                    .unsupportedVersion, at: vAt,
                    "announcement version \(version); this decoder reads version \(Self.version)")
            }
            let idBytes = try r.readRaw(DeviceID.byteCount, "the device ID")
            guard let device = DeviceID(bytes: idBytes) else { throw r.error(.truncated, "expected the device ID") }
            let instance = try r.readFixed64("the instance")
            let cAt = r.offset
            let count = try r.readVarint("the endpoint count")
            guard count >= 1 else {
                throw WireError(.invalidValue, at: cAt, "an announcement lists at least one endpoint")
            }
            guard count <= UInt64(Self.maxEndpoints) else {
                throw WireError(
                    .limitExceeded, at: cAt,
                    "\(count) endpoints; at most \(Self.maxEndpoints) (DiscoveryAnnouncement.maxEndpoints)")
            }
            var endpoints = [Endpoint]()
            endpoints.reserveCapacity(Int(count))
            for _ in 0..<count {
                let at = r.offset
                let e = try Self.readEndpoint(&r)
                if let p = endpoints.last, !(p < e) {
                    throw WireError(
                        p == e ? .duplicate : .unsorted, at: at, "endpoints must strictly increase; \(e) follows \(p)")
                }
                endpoints.append(e)
            }
            return DiscoveryAnnouncement(device: device, instance: instance, endpoints: endpoints)
        }
    }

    static func readEndpoint(_ r: inout WireReader) throws(WireError) -> Endpoint {
        let kAt = r.offset
        let kind = try r.readByte("an endpoint kind")
        let host: Endpoint.Host
        switch kind {
        case 0:
            host = .source
        case 4:
            let raw = try r.readRaw(4, "an IPv4 address")
            let a = raw.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            // 0.0.0.0 says "wherever I am": that is kind 0, the one canonical way to say it.
            guard a != 0 else {
                throw WireError(
                    .invalidValue, at: kAt &+ 1, "the unspecified address 0.0.0.0; use kind 0 (the source address)")
            }
            host = .ipv4(a)
        case 6:
            let raw = try r.readRaw(16, "an IPv6 address")
            let high = raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = raw.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard high != 0 || low != 0 else {
                throw WireError(
                    .invalidValue, at: kAt &+ 1, "the unspecified address ::; use kind 0 (the source address)")
            }
            host = .ipv6(high: high, low: low)
        default:
            throw WireError(
                .invalidValue, at: kAt, "endpoint kind \(kind); known kinds are 0 (source), 4 (IPv4) and 6 (IPv6)")
        }
        let pAt = r.offset
        let port = try r.readVarint("a port")
        guard port >= 1, port <= 65_535 else { throw WireError(.invalidValue, at: pAt, "port \(port) is not 1–65535") }
        return Endpoint(host: host, port: UInt16(port))
    }
}

extension DiscoveryAnnouncement.Endpoint.Host {
    /// Bytes of the address on the wire.
    var addressBytes: Int {
        switch self {
        case .source: 0
        case .ipv4: 4
        case .ipv6: 16
        }
    }

    /// The address as two numbers that order as its bytes do.
    var sortKey: (UInt64, UInt64) {
        switch self {
        case .source: (0, 0)
        case .ipv4(let a): (UInt64(a), 0)
        case let .ipv6(high, low): (high, low)
        }
    }

    /// Dotted quad, RFC 5952 IPv6 text (longest run of two or more zero groups as `::`), or
    /// `source`.
    public var text: String {
        switch self {
        case .source:
            return "source"
        case .ipv4(let a):
            return [24, 16, 8, 0].map { String(UInt8(truncatingIfNeeded: a >> UInt32($0))) }.joined(separator: ".")
        case let .ipv6(high, low):
            let groups = (0..<8).map { i -> UInt16 in
                let half = i < 4 ? high : low
                return UInt16(truncatingIfNeeded: half >> UInt64(48 - 16 * (i % 4)))
            }
            var best = (start: -1, length: 0), run = (start: -1, length: 0)
            for (i, g) in groups.enumerated() {
                if g == 0 {
                    run = run.start < 0 ? (i, 1) : (run.start, run.length + 1)
                    if run.length > best.length { best = run }
                } else {
                    run = (-1, 0)
                }
            }
            let hex = groups.map { String($0, radix: 16) }
            guard best.length >= 2 else { return hex.joined(separator: ":") }
            let head = hex[..<best.start].joined(separator: ":"),
                tail = hex[(best.start + best.length)...].joined(separator: ":")
            return head + "::" + tail
        }
    }
}
