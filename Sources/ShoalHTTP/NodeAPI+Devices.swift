// NodeAPI+Devices: this device, and the trusted, pending and discovered devices (accept, reject, remove).

import Foundation
import Hummingbird
import Shoal

extension NodeAPI {
    /// `GET /api/v1/device`: this device's ID, node ID and name.
    func device() async -> Response {
        APIResponse.json([
            "device": node.deviceID.text, "node": node.nodeID.hex, "name": await node.sync.configuration.nodeName
        ])
    }

    /// `GET /api/v1/devices`: as `shoal peer list --json` — trusted (with how each address was
    /// found and whether it is connected), pending (refused since the daemon started) and discovered.
    func devices() async -> Response {
        let connected = await node.connectedDevices()
        var trusted = [[String: Any]]()
        for d in await node.trustedDevices() {
            let found = await node.addresses(of: d.device)
            let seen = await node.lastSeen(of: d.device)
            trusted.append([
                "device": d.device.text, "name": d.name, "addresses": d.addresses, "added": DateText.iso(d.added),
                "connected": connected.contains(d.device),
                "found": found.map {
                    ["address": $0.address, "source": $0.source.rawValue, "connected": $0.isConnected]
                },
                "lastSeen": seen.latest.map(DateText.iso) ?? NSNull(),
                "lastSeenBy": seen.latestSource?.rawValue ?? NSNull()
            ])
        }
        let pending = await node.pendingDevices()
        let known = Set(trusted.compactMap { $0["device"] as? String }).union(pending.map(\.device.text))
        let discovered = await node.discoveredDevices().filter { !known.contains($0.device.text) }
        return APIResponse.json([
            "trusted": trusted,
            "pending": pending.map {
                [
                    "device": $0.device.text, "address": $0.address, "lastSeen": DateText.iso($0.lastSeen),
                    "count": $0.count
                ] as [String: Any]
            },
            "discovered": discovered.map {
                ["device": $0.device.text, "addresses": $0.addresses, "lastSeen": DateText.iso($0.lastSeen)]
                    as [String: Any]
            }
        ])
    }

    /// `POST /api/v1/devices` `{"device", "name"?, "address"?}`: trusts a device (accepting a
    /// pending one); its connections are accepted at once.
    func trust(_ r: APIRequest) async throws -> Response {
        let body = try await r.json().object("the body")
        guard let text = try body["device"].string("device") else {
            throw APIError.invalid("give the device ID to trust: {\"device\": \"IX6YHFA-…\"} (`shoal id` prints it)")
        }
        let id = try deviceID(text)
        let d = try await node.trustDevice(
            id, name: try body["name"].string("name"), address: try body["address"].string("address"))
        return APIResponse.json(["device": d.device.text, "name": d.name, "addresses": d.addresses], status: .created)
    }

    /// `DELETE /api/v1/devices/{device}`: stops trusting a device, or forgets (rejects) a pending one.
    func removeDevice(_ text: String) async throws -> Response {
        let id = try deviceID(text)
        let known = await node.trustedDevices().contains { $0.device == id }
        let pending = await node.pendingDevices().contains { $0.device == id }
        guard known || pending else {
            throw APIError(
                .notFound, ShoalError.Code.unknownItem.name,
                "\(id) is neither a trusted nor a pending device (GET /api/v1/devices lists them)")
        }
        try await node.removeDevice(id)
        return APIResponse.json(["removed": id.text])
    }

    /// A device ID in its text form (`shoal id`), or a 400 naming it.
    func deviceID(_ text: String) throws(APIError) -> DeviceID {
        do { return try DeviceID(text: text) } catch {
            throw APIError.invalid(
                "\(text.prefix(80).debugDescription) is not a device ID (\(error)); `shoal id` prints one")
        }
    }
}

/// ISO 8601 text of a date, with milliseconds.
enum DateText {
    static func iso(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: date)
    }
}
