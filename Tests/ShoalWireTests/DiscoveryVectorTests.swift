// DiscoveryVectorTests: Spec/vectors/discovery.json — local discovery announcements both ways, and their invalid forms.

import Foundation
import Testing
import ShoalSamples
@testable import ShoalWire
import ShoalWireJSON

/// The JSON form of announcements (Spec/vectors/README.md, "Discovery vectors").
enum DiscoveryJSON {
    static func json(_ a: DiscoveryAnnouncement) -> [String: Any] {
        ["device": a.device.hex, "instance": String(a.instance), "endpoints": a.endpoints.map(endpoint)]
    }

    static func endpoint(_ e: DiscoveryAnnouncement.Endpoint) -> [String: Any] {
        switch e.host {
        case .source: ["kind": "source", "port": Int(e.port), "text": e.description]
        case .ipv4(let a):
            ["kind": "ipv4", "address": String(format: "%08x", a), "port": Int(e.port), "text": e.description]
        case let .ipv6(h, l):
            [
                "kind": "ipv6", "address": String(format: "%016llx%016llx", h, l), "port": Int(e.port),
                "text": e.description
            ]
        }
    }

    static func announcement(_ o: [String: Any]) throws -> DiscoveryAnnouncement {
        guard let device = DeviceID(hex: try VectorJSON.string(o["device"], "device")) else {
            throw VectorJSONError("device is not 64 hex digits")
        }
        let endpoints = try VectorJSON.array(o["endpoints"], "endpoints").map { any -> DiscoveryAnnouncement.Endpoint in
            let e = try VectorJSON.object(any, "endpoint")
            let port = UInt16(try VectorJSON.int(e["port"], "port"))
            let address = (e["address"] as? String).flatMap { Hex.bytes($0) } ?? []
            func number(_ b: ArraySlice<UInt8>) -> UInt64 { b.reduce(0) { $0 << 8 | UInt64($1) } }
            switch try VectorJSON.string(e["kind"], "kind") {
            case "source": return .init(host: .source, port: port)
            case "ipv4" where address.count == 4: return .init(host: .ipv4(UInt32(number(address[...]))), port: port)
            case "ipv6" where address.count == 16:
                return .init(host: .ipv6(high: number(address[..<8]), low: number(address[8...])), port: port)
            default: throw VectorJSONError("bad endpoint \(e)")
            }
        }
        return DiscoveryAnnouncement(
            device: device, instance: try VectorJSON.uint64(o["instance"], "instance"), endpoints: endpoints)
    }
}

@Suite struct DiscoveryVectorTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Spec/vectors/discovery.json")

    struct Vector: Sendable, CustomTestStringConvertible {
        var name: String, hex: String, error: String?, offset: Int?
        var json: String  // serialized, so the vector is Sendable
        var testDescription: String { name }
    }

    static let vectors: [Vector] = {
        guard let data = try? Data(contentsOf: file),
            let list = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { return [] }
        return list.map { v in
            let json =
                (v["json"]).flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }.map {
                    String(decoding: $0, as: UTF8.self)
                } ?? ""
            return Vector(
                name: v["name"] as? String ?? "?", hex: v["hex"] as? String ?? "", error: v["error"] as? String,
                offset: v["offset"] as? Int, json: json)
        }
    }()

    @Test func vectorFileIsPresent() {
        #expect(Self.vectors.filter { $0.error == nil }.count >= 4, "Spec/vectors/discovery.json is missing or short")
        let codes = Set(Self.vectors.compactMap(\.error))
        for code in [
            "bad_magic", "unsupported_version", "truncated", "limit_exceeded", "invalid_value", "unsorted", "duplicate",
            "trailing_bytes", "overlong_varint"
        ] {
            #expect(codes.contains(code), "no invalid vector for \(code)")
        }
    }

    @Test(arguments: vectors.filter { $0.error == nil })
    func validVector(_ v: Vector) throws {
        let bytes = try #require(Hex.bytes(v.hex))
        let decoded = try DiscoveryAnnouncement(decoding: bytes)
        #expect(Hex.string(decoded.encoded()) == v.hex, "decode → encode changed the bytes")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(v.json.utf8)) as? [String: Any])
        #expect(Hex.string(try DiscoveryJSON.announcement(expected).encoded()) == v.hex, "JSON → encode differs")
        let got = String(
            decoding: try JSONSerialization.data(withJSONObject: DiscoveryJSON.json(decoded), options: [.sortedKeys]),
            as: UTF8.self)
        #expect(got == v.json, "decoded value differs from the vector's JSON")
    }

    @Test(arguments: vectors.filter { $0.error != nil })
    func invalidVector(_ v: Vector) throws {
        let bytes = try #require(Hex.bytes(v.hex))
        do {
            let a = try DiscoveryAnnouncement(decoding: bytes)
            Issue.record("decoded \(a); expected \(v.error ?? "")")
        } catch {
            #expect(error.code.name == v.error, "\(error)")
            #expect(error.offset == v.offset, "\(error)")
        }
    }

    /// The encoder sorts, drops duplicates and keeps at most 16 endpoints; seeded round trips.
    @Test func randomAnnouncementsRoundTrip() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xD15C_0001)
        var rng = SplitMix64(seed: seed)
        for i in 0..<500 {
            let device = try #require(DeviceID(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
            let endpoints = (0..<Int(rng.next() % 24)).map { _ -> DiscoveryAnnouncement.Endpoint in
                let port = UInt16(truncatingIfNeeded: rng.next() % 4 + 7400)
                switch rng.next() % 3 {
                case 0: return .init(host: .source, port: port)
                case 1: return .init(host: .ipv4(UInt32(truncatingIfNeeded: rng.next() % 4 + 1)), port: port)
                default: return .init(host: .ipv6(high: rng.next() % 2, low: rng.next() % 3 + 1), port: port)
                }
            }
            let a = DiscoveryAnnouncement(device: device, instance: rng.next(), endpoints: endpoints)
            let bytes = a.encoded()
            guard !endpoints.isEmpty else {
                #expect(throws: WireError.self, "seed \(seed) case \(i): no endpoints must not decode") {
                    try DiscoveryAnnouncement(decoding: bytes)
                }
                continue
            }
            let back = try DiscoveryAnnouncement(decoding: bytes)
            #expect(back.endpoints == Array(Set(endpoints).sorted().prefix(16)), "seed \(seed) case \(i)")
            #expect(
                back.device == device && back.instance == a.instance && back.encoded() == bytes,
                "seed \(seed) case \(i)")
            #expect(bytes.count <= DiscoveryAnnouncement.maxBytes, "seed \(seed) case \(i)")
        }
    }

    @Test func hostText() {
        typealias H = DiscoveryAnnouncement.Endpoint.Host
        #expect(H.ipv4(0x0A4D_0102).text == "10.77.1.2")
        #expect(H.ipv6(high: 0xFE80_0000_0000_0000, low: 1).text == "fe80::1")
        #expect(H.ipv6(high: 0xFD00_0001_0000_0000, low: 0x0000_0000_0000_0001).text == "fd00:1::1")
        #expect(H.ipv6(high: 0x2001_0DB8_0000_0001, low: 0x0001_0001_0001_0001).text == "2001:db8:0:1:1:1:1:1")
        #expect(H.ipv6(high: 0, low: 1).text == "::1")
        #expect(
            DiscoveryAnnouncement.Endpoint(host: .ipv6(high: 0xFD00_0000_0000_0000, low: 2), port: 7400).description
                == "[fd00::2]:7400")
    }

    /// Writes Spec/vectors/discovery.json when SHOAL_WRITE_VECTORS=1.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SHOAL_WRITE_VECTORS"] == "1"))
    func writeDiscoveryVectors() throws {
        var out = [[String: Any]]()
        func valid(_ name: String, _ a: DiscoveryAnnouncement) throws {
            let bytes = a.encoded()
            let back = try DiscoveryAnnouncement(decoding: bytes)
            #expect(back.encoded() == bytes, "\(name)")
            out.append(["name": name, "kind": "discovery", "hex": Hex.string(bytes), "json": DiscoveryJSON.json(back)])
        }
        func invalid(_ name: String, _ bytes: [UInt8]) {
            do {
                _ = try DiscoveryAnnouncement(decoding: bytes)
                Issue.record("\(name) decoded")
            } catch {
                out.append([
                    "name": name, "kind": "discovery", "hex": Hex.string(bytes), "error": error.code.name,
                    "offset": error.offset, "detail": error.detail
                ])
            }
        }
        let device = try #require(DeviceID(hex: "4e8f" + String(repeating: "5a", count: 30)))
        let source = DiscoveryAnnouncement.Endpoint(host: .source, port: 7400)
        let v4 = DiscoveryAnnouncement.Endpoint(host: .ipv4(0x0A4D_0002), port: 7400)
        let v6 = DiscoveryAnnouncement.Endpoint(host: .ipv6(high: 0xFD00_0000_0000_0077, low: 2), port: 7400)
        let one = DiscoveryAnnouncement(device: device, instance: 0x0123_4567_89AB_CDEF, endpoints: [source])
        try valid("source-address", one)
        try valid("ipv4-address", DiscoveryAnnouncement(device: device, instance: 1, endpoints: [v4]))
        try valid("ipv6-address", DiscoveryAnnouncement(device: device, instance: 2, endpoints: [v6]))
        try valid(
            "three-kinds-two-ports",
            DiscoveryAnnouncement(
                device: device, instance: UInt64.max,
                endpoints: [v6, v4, source, .init(host: .source, port: 65_535)]))
        try valid(
            "sixteen-endpoints",
            DiscoveryAnnouncement(
                device: device, instance: 0,
                endpoints: (1...16).map { .init(host: .ipv4(0x0A4D_0000 + UInt32($0)), port: 7400) }))
        let b = one.encoded()  // 73 68 64 61 | 01 | 32-byte ID | 8-byte instance | 01 | 00 e8 39
        invalid("empty", [])
        invalid("magic-only", Array(b.prefix(4)))
        invalid("bad-magic", [0x53, 0x48] + b.dropFirst(2))
        invalid("syncthing-magic", [0x2E, 0xA7, 0xD9, 0x0B] + b.dropFirst(4))
        var c = b; c[4] = 2
        invalid("version-2", c)
        invalid("device-id-truncated", Array(b.prefix(20)))
        invalid("no-endpoint-count", Array(b.prefix(45)))
        c = b; c[45] = 0
        invalid("zero-endpoints", Array(c.prefix(46)))
        c = b; c[45] = 17
        invalid("seventeen-endpoints", c)
        c = b; c[46] = 5
        invalid("unknown-endpoint-kind", c)
        invalid("ipv4-unspecified", Array(b.prefix(46)) + [4, 0, 0, 0, 0, 0xE8, 0x39])
        invalid("ipv6-unspecified", Array(b.prefix(46)) + [6] + [UInt8](repeating: 0, count: 16) + [0xE8, 0x39])
        invalid("port-zero", Array(b.prefix(47)) + [0])
        invalid("port-65536", Array(b.prefix(47)) + [0x80, 0x80, 0x04])
        invalid("port-overlong", Array(b.prefix(47)) + [0xE8, 0xB9, 0x00])
        invalid("port-missing", Array(b.prefix(47)))
        c = b; c[45] = 2
        invalid("endpoints-duplicate", c.prefix(46) + [0, 0xE8, 0x39, 0, 0xE8, 0x39])
        invalid("endpoints-unsorted", c.prefix(46) + [4, 10, 77, 0, 2, 0xE8, 0x39, 0, 0xE8, 0x39])
        invalid("trailing-byte", b + [0])
        invalid("over-1024-bytes", b + [UInt8](repeating: 0, count: 1_025 - b.count))
        let data = try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: Self.file)
    }
}
