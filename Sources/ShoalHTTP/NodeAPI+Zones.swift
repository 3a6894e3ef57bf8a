// NodeAPI+Zones: zones — list, create, delete, members, share, unshare.

import Foundation
import Hummingbird
import Shoal

extension NodeAPI {
    /// The longest zone name, and the longest owner, in UTF-8 bytes (the store's limit).
    static let maxZoneNameBytes = 255

    /// A zone path segment: `name` or `name@owner`, as the CLI takes it; each part 1 to
    /// ``maxZoneNameBytes`` bytes.
    /// - Throws: ``APIError`` 400 naming the zone and the limit.
    func zoneID(_ text: String) throws(APIError) -> RecordZone.ID {
        let id: RecordZone.ID
        if let at = text.lastIndex(of: "@"), at != text.startIndex {
            id = RecordZone.ID(name: String(text[..<at]), owner: String(text[text.index(after: at)...]))
        } else {
            id = RecordZone.ID(name: text)
        }
        for (what, part) in [("name", id.name), ("owner", id.owner)]
        where part.isEmpty || part.utf8.count > Self.maxZoneNameBytes {
            throw APIError.invalid(
                "the zone \(text.prefix(80).debugDescription) is name or name@owner, each 1–\(Self.maxZoneNameBytes) UTF-8 bytes; its \(what) has \(part.utf8.count)"
            )
        }
        return id
    }

    /// The zone a path segment names, when this node holds it.
    /// - Throws: ``APIError`` 400 for a malformed zone, 404 `zoneNotFound` for one it does not hold.
    func existingZone(_ text: String) async throws -> RecordZone.ID {
        let id = try zoneID(text)
        guard await node.zones().contains(where: { $0.id == id }) else { throw ShoalError.zoneNotFound(id) }
        return id
    }

    /// A zone with this device's part in it: `owner`, a member's role, or `open` (no share).
    func zoneObject(_ z: ZoneInfo) async throws -> [String: Any] {
        let m = try await node.members(of: z.id)
        let role = m.owner == nil ? "open" : m.owner == node.deviceID ? "owner" : m.role.map(Self.roleName) ?? "none"
        return [
            "zone": z.id.description, "scope": "\(z.scope)", "incarnation": z.incarnation.hex, "role": role,
            "owner": m.owner?.text ?? "",
            "members": m.members.map { ["device": $0.device.text, "role": Self.roleName($0.role)] }
        ]
    }

    /// A member's role as the API spells it: `readOnly` or `readWrite`.
    static func roleName(_ role: ZoneShare.Role) -> String { role == .readOnly ? "readOnly" : "readWrite" }

    /// `GET /api/v1/zones`: the live zones, as `shoal zone list --json`, with their members.
    func zones() async throws -> Response {
        var out = [[String: Any]]()
        for z in await node.zones() { out.append(try await zoneObject(z)) }
        return APIResponse.json(["zones": out])
    }

    /// `GET /api/v1/zones/{zone}`.
    func zone(_ text: String) async throws -> Response {
        let id = try zoneID(text)
        guard let z = await node.zones().first(where: { $0.id == id }) else {
            throw ShoalError.zoneNotFound(id)
        }
        return APIResponse.json(try await zoneObject(z))
    }

    /// `POST /api/v1/zones` `{"zone": "name"}`: creates a zone this device owns.
    func createZone(_ r: APIRequest) async throws -> Response {
        let body = try await r.json().object("the body")
        guard let text = try body["zone"].string("zone") else {
            throw APIError.invalid("give the zone to create: {\"zone\": \"notes\"}")
        }
        let z = try await node.createZone(try zoneID(text))
        return APIResponse.json(try await zoneObject(z), status: .created)
    }

    /// `DELETE /api/v1/zones/{zone}`: deletes the zone and its records, here and, when this
    /// device owns it, on its members.
    func deleteZone(_ text: String) async throws -> Response {
        let id = try zoneID(text)
        try await node.deleteZone(id)
        return APIResponse.json(["deleted": id.description])
    }

    /// `GET /api/v1/zones/{zone}/members`: the owner and the devices it is shared with.
    func members(_ text: String) async throws -> Response {
        let m = try await node.members(of: try zoneID(text))
        return APIResponse.json([
            "zone": m.zone.description, "owner": m.owner?.text ?? "", "serial": "\(m.serial)",
            "members": m.members.map { ["device": $0.device.text, "role": Self.roleName($0.role)] }
        ])
    }

    /// `PUT /api/v1/zones/{zone}/members/{device}` `{"role": "readOnly" | "readWrite"}`: shares
    /// a zone this device owns.
    /// The zone and the device are looked up first: 404 when either is unknown (the device
    /// must be trusted: `POST /api/v1/devices`).
    func share(_ zone: String, _ device: String, _ r: APIRequest) async throws -> Response {
        let z = try await existingZone(zone), d = try deviceID(device)
        guard await node.trustedDevices().contains(where: { $0.device == d }) else {
            throw APIError(
                .notFound, ShoalError.Code.unknownItem.name,
                "\(d) is not a trusted device; trust it first (POST /api/v1/devices), then share zone \(z) with it")
        }
        let body = try await r.json().object("the body")
        let role: ZoneShare.Role
        switch try body["role"].string("role") {
        case "readOnly": role = .readOnly
        case "readWrite": role = .readWrite
        default: throw APIError.invalid("give the member's role: {\"role\": \"readOnly\"} or {\"role\": \"readWrite\"}")
        }
        try await node.shareZone(z, with: d, role: role)
        return APIResponse.json(["zone": z.description, "device": d.text, "role": Self.roleName(role)])
    }

    /// `DELETE /api/v1/zones/{zone}/members/{device}`: stops sharing the zone with the device.
    /// 404 when the zone is unknown or not shared with the device.
    func unshare(_ zone: String, _ device: String) async throws -> Response {
        let z = try await existingZone(zone), d = try deviceID(device)
        guard try await node.members(of: z).members.contains(where: { $0.device == d }) else {
            throw APIError(
                .notFound, ShoalError.Code.unknownItem.name,
                "zone \(z) is not shared with \(d) (GET /api/v1/zones/\(z)/members lists its members)")
        }
        try await node.unshareZone(z, from: d)
        return APIResponse.json(["zone": z.description, "device": d.text, "role": "none"])
    }
}
