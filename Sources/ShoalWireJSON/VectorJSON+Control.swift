// VectorJSON+Control: the JSON form of control payloads (error, ping, goodbye) and discovery
// announcements, as Spec/vectors/frames.json and discovery.json state them.

import Foundation
package import ShoalWire

extension VectorJSON {
    /// The control payload kinds of frames.json, by their vector kind.
    package static let controlKinds = ["error_message", "ping", "goodbye"]

    /// Decodes a control payload of `kind` (one of ``controlKinds``) into its JSON form.
    /// - Throws: ``WireError`` for bytes that are not such a payload, ``VectorJSONError`` for an
    ///   unknown kind.
    package static func control(_ kind: String, _ bytes: [UInt8]) throws -> [String: Any] {
        switch kind {
        case "error_message":
            let m = try ErrorMessage(decoding: bytes)
            var o: [String: Any] = ["code": m.code, "message": m.message]
            if let retry = m.retryAfterMilliseconds { o["retry_after_ms"] = String(retry) }
            return o
        case "ping": return ["nonce": String(try PingMessage(decoding: bytes).nonce)]
        case "goodbye": return ["reason": try GoodbyeMessage(decoding: bytes).reason]
        default:
            throw VectorJSONError("\(kind) is not a control payload kind (\(controlKinds.joined(separator: ", ")))")
        }
    }

    /// Encodes a control payload of `kind` from its JSON form.
    /// - Throws: ``VectorJSONError`` for an unknown kind or JSON not of the documented form.
    package static func encodeControl(_ kind: String, _ o: [String: Any]) throws -> [UInt8] {
        switch kind {
        case "error_message":
            let retry = try optional(o["retry_after_ms"]).map { try uint64($0, "retry_after_ms") }
            return ErrorMessage(
                code: try string(o["code"], "code"), retryAfterMilliseconds: retry,
                message: try string(o["message"], "message")
            ).encoded()
        case "ping": return PingMessage(nonce: try uint64(o["nonce"], "nonce")).encoded()
        case "goodbye": return GoodbyeMessage(reason: try string(o["reason"], "reason")).encoded()
        default:
            throw VectorJSONError("\(kind) is not a control payload kind (\(controlKinds.joined(separator: ", ")))")
        }
    }

    /// A discovery announcement's JSON form: the device as hex, the instance as a decimal string,
    /// the endpoints with their kind, address (hex), port and text.
    package static func discovery(_ a: DiscoveryAnnouncement) -> [String: Any] {
        ["device": a.device.hex, "instance": String(a.instance), "endpoints": a.endpoints.map(endpoint)]
    }

    static func endpoint(_ e: DiscoveryAnnouncement.Endpoint) -> [String: Any] {
        switch e.host {
        case .source: ["kind": "source", "port": Int(e.port), "text": e.description]
        case .ipv4(let a):
            [
                "kind": "ipv4", "address": Hex.string(withUnsafeBytes(of: a.bigEndian) { Array($0) }),
                "port": Int(e.port), "text": e.description
            ]
        case let .ipv6(h, l):
            ["kind": "ipv6", "address": Hex.string(h) + Hex.string(l), "port": Int(e.port), "text": e.description]
        }
    }

    /// A discovery announcement from its JSON form (each endpoint's `text` is ignored).
    /// - Throws: ``VectorJSONError`` for JSON not of the documented form.
    package static func discovery(_ o: [String: Any]) throws -> DiscoveryAnnouncement {
        guard let device = DeviceID(hex: try string(o["device"], "device")) else {
            throw VectorJSONError("device is not 64 hex digits")
        }
        let endpoints = try array(o["endpoints"], "endpoints").map { any -> DiscoveryAnnouncement.Endpoint in
            let e = try object(any, "endpoint")
            let portValue = try int(e["port"], "port")
            guard let port = UInt16(exactly: portValue) else {
                throw VectorJSONError("port \(portValue) is not 0…65535")
            }
            let address = try optional(e["address"]).map { try string($0, "address") }.flatMap { Hex.bytes($0) } ?? []
            func number(_ b: ArraySlice<UInt8>) -> UInt64 { b.reduce(0) { $0 << 8 | UInt64($1) } }
            switch try string(e["kind"], "kind") {
            case "source": return .init(host: .source, port: port)
            case "ipv4" where address.count == 4:
                return .init(host: .ipv4(UInt32(truncatingIfNeeded: number(address[...]))), port: port)
            case "ipv6" where address.count == 16:
                return .init(host: .ipv6(high: number(address[..<8]), low: number(address[8...])), port: port)
            default:
                throw VectorJSONError(
                    "endpoint \(e) is not a source, ipv4 (8 hex digits) or ipv6 (32 hex digits) endpoint")
            }
        }
        return DiscoveryAnnouncement(
            device: device, instance: try uint64(o["instance"], "instance"), endpoints: endpoints)
    }
}
