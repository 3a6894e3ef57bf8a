// TrustedDeviceReport: a trusted device as `shoal peer list` and `shoal status` show it — how each address was found, when it was last heard from.

import Foundation
import Shoal

/// A trusted device with its addresses and how each was found (`peer add --address`, `--peer`,
/// local discovery), and when it was last heard from, for `shoal peer list` and `shoal status`
/// alike.
struct TrustedDeviceReport {
    var device: TrustedDevice
    var found: [ShoalNode.DeviceAddress]
    /// Whether a connection with the device is open, dialled or accepted.
    var isConnected: Bool
    /// Its last frame and last announcement since the node started.
    var lastSeen: DeviceLastSeen

    /// The node's trusted devices, in the order they were added.
    static func all(_ node: ShoalNode) async -> [TrustedDeviceReport] {
        let connected = await node.connectedDevices()
        var out = [TrustedDeviceReport]()
        for d in await node.trustedDevices() {
            out.append(
                TrustedDeviceReport(
                    device: d, found: await node.addresses(of: d.device), isConnected: connected.contains(d.device),
                    lastSeen: await node.lastSeen(of: d.device)))
        }
        return out
    }

    /// For `--json`: `lastSeen` (ISO 8601 with milliseconds, or null), `lastSeenBy` (`frame`:
    /// on a connection, `announcement`: through local discovery, or null), and both times.
    var lastSeenJSON: [String: Any] {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func text(_ d: Date?) -> Any { d.map(f.string(from:)) ?? NSNull() }
        let by: Any = lastSeen.latestSource?.rawValue ?? NSNull()
        return [
            "lastSeen": text(lastSeen.latest), "lastSeenBy": by, "lastFrame": text(lastSeen.frame),
            "lastAnnouncement": text(lastSeen.announcement)
        ]
    }

    /// For a table: `2.4 s ago (frame)`, or `-` when the device was not heard from.
    func lastSeenText(now: Date = Date()) -> String {
        guard let latest = lastSeen.latest else { return "-" }
        return String(format: "%.1f s ago", max(0, now.timeIntervalSince(latest)))
            + " (\(lastSeen.latestSource?.rawValue ?? "-"))"
    }

    /// For `--json`: one object per address, `{address, source, connected}`.
    var foundJSON: [[String: Any]] {
        found.map { ["address": $0.address, "source": $0.source.rawValue, "connected": $0.isConnected] }
    }

    /// For a table: `10.77.0.1:7400 (discovered),…`, or `-` when no address is known.
    var foundText: String {
        found.isEmpty ? "-" : found.map { "\($0.address) (\($0.source.rawValue))" }.joined(separator: ",")
    }
}
