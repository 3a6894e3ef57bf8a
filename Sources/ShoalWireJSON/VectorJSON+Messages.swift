// VectorJSON+Messages: the JSON form of replication messages and zone shares (Spec/vectors/README.md, "Message vectors").

import Crypto
import Foundation
package import ShoalWire

/// The JSON form of replication messages (Spec/vectors/README.md, "Message vectors") and of the
/// zone shares their announcements carry.
extension VectorJSON {
    package static func share(_ s: ZoneShare) -> [String: Any] {
        [
            "serial": String(s.serial), "deleted": s.isDeleted, "owner_key": hex(s.ownerKey),
            "owner_device": hex(Array(SHA256.hash(data: s.ownerKey))),
            "members": s.members.map { ["device": $0.device.hex, "role": $0.role.description] as [String: Any] },
            "signature": hex(s.signature)
        ]
    }

    /// The share of the announcement of `zone` and `incarnation`; members in the order given (not
    /// re-sorted), so an encoder test sees exactly the list. `owner_device` is checked, not read.
    package static func share(_ any: Any?, zone: RecordZone.ID, incarnation: NodeID) throws -> ZoneShare {
        let o = try object(any, "share")
        let members = try array(o["members"], "share.members").enumerated().map { i, m in
            let mo = try object(m, "share.members[\(i)]")
            guard let device = DeviceID(hex: try string(mo["device"], "share.members[\(i)].device")) else {
                throw VectorJSONError("share.members[\(i)].device: expected 64 hex digits")
            }
            let role: ZoneShare.Role
            switch try string(mo["role"], "share.members[\(i)].role") {
            case "read-only": role = .readOnly
            case "read-write": role = .readWrite
            case let r: throw VectorJSONError("share.members[\(i)].role: \(r) is not read-only or read-write")
            }
            return ZoneShare.Member(device: device, role: role)
        }
        var s = ZoneShare(
            zone: zone, incarnation: incarnation, serial: try uint64(o["serial"], "share.serial"),
            isDeleted: try bool(o["deleted"], "share.deleted"), ownerKey: try bytes(o["owner_key"], "share.owner_key"),
            members: [], signature: try bytes(o["signature"], "share.signature"))
        s.members = members
        return s
    }

    package static func announcements(_ zones: [ZoneAnnouncement]) -> [Any] {
        zones.map {
            [
                "zone": zone($0.zone), "incarnation": node($0.incarnation), "deleted": $0.isDeleted,
                "share": $0.share.map { share($0) } ?? NSNull()
            ] as [String: Any]
        }
    }

    package static func announcements(_ any: Any?) throws -> [ZoneAnnouncement] {
        try array(any, "zones").map { z in
            let o = try object(z, "zone")
            let id = try zone(o["zone"], "zone"), incarnation = try node(o["incarnation"], "incarnation")
            return ZoneAnnouncement(
                zone: id, incarnation: incarnation, isDeleted: try bool(o["deleted"], "deleted"),
                share: try optional(o["share"]).map { try share($0, zone: id, incarnation: incarnation) })
        }
    }

    package static func message(
        _ kind: String, _ bytes: [UInt8], zone liveZone: RecordZone.ID = VectorJSON.liveZone,
        stated liveReference: VersionVector = VectorJSON.liveReference
    ) throws -> (json: [String: Any], encoded: [UInt8]) {
        switch kind {
        case "hello":
            let m = try HelloMessage(decoding: bytes)
            return (
                [
                    "min_version": String(m.minimumVersion), "max_version": String(m.maximumVersion),
                    "node": node(m.node), "name": m.name,
                    "capabilities": String(m.capabilities), "dictionaries": m.dictionaries.map { String($0) },
                    "max_frame_payload": String(m.maxFramePayloadBytes), "zones": announcements(m.zones)
                ], m.encoded()
            )
        case "zones":
            let m = try ZonesMessage(decoding: bytes)
            return (["zones": announcements(m.zones)], m.encoded())
        case "subscribe":
            let m = try SubscribeMessage(decoding: bytes)
            var o: [String: Any] = [
                "zone": zone(m.zone), "incarnation": node(m.incarnation),
                "token": m.token.map { hex($0.bytes) } ?? NSNull(),
                "knowledge": vector(m.knowledge), "window": String(m.window)
            ]
            if let n = m.number { o["number"] = String(n) }
            if let heads = m.writerLogHeads {
                o["writer_log_heads"] = heads.sorted { $0.key < $1.key }.map {
                    ["writer": node($0.key), "sequence": String($0.value)] as [String: Any]
                }
            }
            return (o, m.encoded())
        case "acknowledgement":
            let m = try AcknowledgementMessage(decoding: bytes)
            return (
                [
                    "zone": zone(m.zone), "incarnation": node(m.incarnation), "batch": String(m.batch),
                    "knowledge": vector(m.knowledge)
                ], m.encoded()
            )
        case "changes":
            let m = try ChangesMessage(decoding: bytes)
            return (
                [
                    "zone": zone(m.zone), "incarnation": node(m.incarnation), "batch": String(m.batch),
                    "caught_up": m.isCaughtUp, "reset": m.isReset,
                    "remaining": m.remaining.map { String($0) } ?? NSNull(),
                    "horizon": m.horizon.map { vector($0) } ?? NSNull(),
                    "token": hex(m.token.bytes), "knowledge": m.knowledge.map { vector($0) } ?? NSNull(),
                    "records": m.records.map { record($0) }, "sparse_records": m.sparseRecords.map { sparse($0) },
                    "base": m.base.map { vector($0) } ?? NSNull(),
                    "subscription": m.subscription.map { String($0) } ?? NSNull()
                ]
                .merging(m.writerLog.map { ["writer_log": writerLog($0)] } ?? [:]) { a, _ in a }, m.encoded()
            )
        case "liveChanges":
            // Decoded in the zone the subscription number stands for: `notes` for every vector.
            // Vectors written against the stated knowledge are read against `liveReference`.
            let m = try LiveChangesMessage(decoding: bytes, zone: liveZone, reference: liveReference)
            var o: [String: Any] = [
                "subscription": String(m.subscription), "zone": zone(m.zone), "batch": String(m.batch),
                "caught_up": m.isCaughtUp,
                "token_kept": String(m.tokenKept), "token_tail": hex(m.tokenTail),
                "knowledge": m.knowledge.map { vector($0) } ?? NSNull(),
                "records": m.records.map { record($0) }, "sparse_records": m.sparseRecords.map { sparse($0) },
                "base": m.base.map { vector($0) } ?? NSNull()
            ]
            if m.reference != nil { o["against_stated"] = true }
            if let w = m.writerLog { o["writer_log"] = writerLog(w) }
            return (o, m.encoded())
        case "assetRequest":
            let m = try AssetRequestMessage(decoding: bytes)
            var o: [String: Any] = ["asset": ["hash": m.asset.hash.hex, "size": String(m.asset.size)]]
            switch m.part {
            case .manifest: o["part"] = "manifest"
            case let .chunks(first, count): o["part"] = "chunks"; o["first"] = String(first); o["count"] = String(count)
            }
            return (o, m.encoded())
        case "assetChunk":
            let m = try AssetChunkMessage(decoding: bytes)
            var o: [String: Any] = ["asset": ["hash": m.asset.hash.hex, "size": String(m.asset.size)]]
            switch m.part {
            case .manifest(let b): o["part"] = "manifest"; o["bytes"] = hex(b)
            case let .chunk(index, b): o["part"] = "chunk"; o["index"] = String(index); o["bytes"] = hex(b)
            case .unavailable: o["part"] = "unavailable"
            }
            return (o, m.encoded())
        case "upstreams":
            let m = try UpstreamsMessage(decoding: bytes)
            return (
                ["zone": zone(m.zone), "incarnation": node(m.incarnation), "nodes": m.nodes.map { node($0) }],
                m.encoded()
            )
        case "wantWhole":
            let m = try WantWholeMessage(decoding: bytes)
            return (["zone": zone(m.zone), "incarnation": node(m.incarnation), "names": m.names], m.encoded())
        default:
            throw VectorJSONError("unknown message kind \(kind)")
        }
    }

    /// The message kinds of Spec/vectors/README.md, "Message vectors".
    package static let messageKinds = [
        "hello", "zones", "subscribe", "acknowledgement", "changes", "liveChanges",
        "assetRequest", "assetChunk", "upstreams", "wantWhole"
    ]

    /// The zone `liveChanges` vectors decode in (their subscription number stands for it).
    package static let liveZone = RecordZone.ID(name: "notes")

    /// The stated knowledge `liveChanges` vectors with flags bit 3 are written against
    /// (Spec/vectors/README.md), the one the fuzz checks decode against too.
    package static let liveReference = VersionVector([
        (
            NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111),
            HLC(milliseconds: 1_790_000_000_000, logical: 0)
        ),
        (
            NodeID(high: 0x0B0B_0000_0000_0002, low: 0x2222_2222_2222_2222),
            HLC(milliseconds: 1_790_000_000_100, logical: 0)
        )
    ])

    package static func asset(_ any: Any?) throws -> Asset {
        let o = try object(any, "asset")
        guard let h = ContentHash(hex: try string(o["hash"], "asset.hash")) else {
            throw VectorJSONError("asset.hash is not 64 hex digits")
        }
        return Asset(hash: h, size: try int64(o["size"], "asset.size"))
    }

    /// Builds the message `json` describes and encodes it.
    package static func encodeMessage(
        _ kind: String, _ o: [String: Any], stated liveReference: VersionVector = VectorJSON.liveReference
    ) throws -> [UInt8] {
        switch kind {
        case "hello":
            return HelloMessage(
                minimumVersion: try uint64(o["min_version"], "min_version"),
                maximumVersion: try uint64(o["max_version"], "max_version"),
                node: try node(o["node"], "node"), name: try string(o["name"], "name"),
                capabilities: try uint64(o["capabilities"], "capabilities"),
                dictionaries: try array(o["dictionaries"], "dictionaries").map { try uint32($0, "dictionary") },
                maxFramePayloadBytes: try uint64(o["max_frame_payload"], "max_frame_payload"),
                zones: try announcements(o["zones"])
            ).encoded()
        case "zones":
            return ZonesMessage(zones: try announcements(o["zones"])).encoded()
        case "subscribe":
            let t = optional(o["token"]).map { try? bytes($0, "token") } ?? nil
            return SubscribeMessage(
                zone: try zone(o["zone"], "zone"), incarnation: try node(o["incarnation"], "incarnation"),
                token: t.map(ChangeToken.init(bytes:)), knowledge: try vector(o["knowledge"], "knowledge"),
                window: try uint64(o["window"], "window"),
                number: try optional(o["number"]).map { try uint64($0, "number") },
                writerLogHeads: try optional(o["writer_log_heads"]).map { any throws -> [NodeID: UInt64] in
                    var heads = [NodeID: UInt64]()
                    for h in try array(any, "writer_log_heads") {
                        let ho = try object(h, "writer log head")
                        heads[try node(ho["writer"], "writer")] = try uint64(ho["sequence"], "sequence")
                    }
                    return heads
                }
            ).encoded()
        case "acknowledgement":
            return AcknowledgementMessage(
                zone: try zone(o["zone"], "zone"), incarnation: try node(o["incarnation"], "incarnation"),
                batch: try uint64(o["batch"], "batch"), knowledge: try vector(o["knowledge"], "knowledge")
            ).encoded()
        case "changes":
            return ChangesMessage(
                zone: try zone(o["zone"], "zone"), incarnation: try node(o["incarnation"], "incarnation"),
                batch: try uint64(o["batch"], "batch"), isCaughtUp: try bool(o["caught_up"], "caught_up"),
                isReset: try bool(o["reset"], "reset"),
                token: ChangeToken(bytes: try bytes(o["token"], "token")),
                knowledge: try optional(o["knowledge"]).map { try vector($0, "knowledge") },
                remaining: try optional(o["remaining"]).map { try uint64($0, "remaining") },
                horizon: try optional(o["horizon"]).map { try vector($0, "horizon") },
                records: try array(o["records"], "records").map { try record($0) },
                sparseRecords: try array(o["sparse_records"] ?? [Any](), "sparse_records").map { try sparse($0) },
                base: try optional(o["base"]).map { try vector($0, "base") },
                subscription: try optional(o["subscription"]).map { try uint64($0, "subscription") },
                writerLog: try optional(o["writer_log"]).map { try writerLog($0) }
            ).encoded()
        case "liveChanges":
            return LiveChangesMessage(
                subscription: try uint64(o["subscription"], "subscription"), zone: try zone(o["zone"], "zone"),
                batch: try uint64(o["batch"], "batch"), isCaughtUp: try bool(o["caught_up"], "caught_up"),
                tokenKept: try count(o["token_kept"], "token_kept"),
                tokenTail: try bytes(o["token_tail"], "token_tail"),
                knowledge: try optional(o["knowledge"]).map { try vector($0, "knowledge") },
                records: try array(o["records"], "records").map { try record($0) },
                sparseRecords: try array(o["sparse_records"] ?? [Any](), "sparse_records").map { try sparse($0) },
                base: try optional(o["base"]).map { try vector($0, "base") },
                reference: (o["against_stated"] as? Bool) == true ? liveReference : nil,
                writerLog: try optional(o["writer_log"]).map { try writerLog($0) }
            ).encoded()
        case "assetRequest":
            let part: AssetRequestMessage.Part =
                try string(o["part"], "part") == "manifest"
                ? .manifest
                : .chunks(first: try uint64(o["first"], "first"), count: try uint64(o["count"], "count"))
            return AssetRequestMessage(asset: try asset(o["asset"]), part: part).encoded()
        case "assetChunk":
            let part: AssetChunkMessage.Part
            switch try string(o["part"], "part") {
            case "manifest": part = .manifest(try bytes(o["bytes"], "bytes"))
            case "chunk": part = .chunk(index: try uint64(o["index"], "index"), bytes: try bytes(o["bytes"], "bytes"))
            default: part = .unavailable
            }
            return AssetChunkMessage(asset: try asset(o["asset"]), part: part).encoded()
        case "upstreams":
            return UpstreamsMessage(
                zone: try zone(o["zone"], "zone"), incarnation: try node(o["incarnation"], "incarnation"),
                nodes: try array(o["nodes"], "nodes").map { try node($0, "node") }
            ).encoded()
        case "wantWhole":
            return WantWholeMessage(
                zone: try zone(o["zone"], "zone"), incarnation: try node(o["incarnation"], "incarnation"),
                names: try array(o["names"], "names").map { try string($0, "name") }
            ).encoded()
        default:
            throw VectorJSONError("unknown message kind \(kind)")
        }
    }
}
