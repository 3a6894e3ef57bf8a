// TrustedDeviceReport: a trusted device as `shoal peer list` and `shoal status` show it — how each address was found.

import Shoal

/// A trusted device with its addresses and how each was found (`peer add --address`, `--peer`,
/// local discovery), for `shoal peer list` and `shoal status` alike.
struct TrustedDeviceReport {
    var device: TrustedDevice
    var found: [ShoalNode.DeviceAddress]
    /// Whether a connection with the device is open, dialled or accepted.
    var isConnected: Bool

    /// The node's trusted devices, in the order they were added.
    static func all(_ node: ShoalNode) async -> [TrustedDeviceReport] {
        let connected = await node.connectedDevices()
        var out = [TrustedDeviceReport]()
        for d in await node.trustedDevices() {
            out.append(TrustedDeviceReport(device: d, found: await node.addresses(of: d.device), isConnected: connected.contains(d.device)))
        }
        return out
    }

    /// For `--json`: one object per address, `{address, source, connected}`.
    var foundJSON: [[String: Any]] { found.map { ["address": $0.address, "source": $0.source.rawValue, "connected": $0.isConnected] } }

    /// For a table: `10.77.0.1:7400 (discovered),…`, or `-` when no address is known.
    var foundText: String { found.isEmpty ? "-" : found.map { "\($0.address) (\($0.source.rawValue))" }.joined(separator: ",") }
}
