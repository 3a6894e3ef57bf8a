// NetworkNode+Trust: which devices may connect, the ones that tried and were refused, and each device's node ID.

public import Foundation
import Logging
import NIOCore
import ShoalStore
public import ShoalWire

/// A device that completed a TLS handshake with this node but is not trusted: refused before
/// any frame, and listed so a user can trust it (Spec/security.md §4).
public struct PendingDevice: Sendable, Hashable {
    /// The device ID its certificate gave.
    public var device: DeviceID
    /// Where its last connection came from (or went to, for a dialled address): `host:port`.
    public var address: String
    /// When it last connected.
    public var lastSeen: Date
    /// How many of its connections were refused since this node started.
    public var count: Int
}

extension NetworkNode {
    /// Most pending devices remembered; past it the one seen longest ago is forgotten.
    static let pendingLimit = 256

    /// Trusts `device`: its connections are accepted from now on, and it is no longer pending.
    public func trust(_ device: DeviceID) {
        trusted.insert(device)
        pending[device] = nil
        // Heard on the LAN before it was trusted: dial it now, not at its next announcement.
        discoveryTrustChanged(device, trusted: true)
    }

    /// Stops trusting `device`: its open connections close at once, and later ones are refused
    /// after the TLS handshake (and listed as pending).
    public func distrust(_ device: DeviceID) {
        trusted.remove(device)
        pending[device] = nil
        lastFrames[device] = nil
        lastAnnouncements[device] = nil
        discoveryTrustChanged(device, trusted: false)
        for (id, c) in connections where c.device == device {
            configuration.logger.notice(
                "closing the connection of a device no longer trusted",
                metadata: ["connection": "\(id)", "device": "\(device.short)"])
            c.writer.finish()
            c.channel.close(promise: nil)
        }
    }

    /// The trusted devices.
    public func trustedDevices() -> Set<DeviceID> { trusted }

    /// The devices refused since this node started, most recently seen first.
    public func pendingDevices() -> [PendingDevice] {
        pending.values.sorted { ($0.lastSeen, $0.device.hex) > ($1.lastSeen, $1.device.hex) }
    }

    /// Whether a connection from (or to) `device` may go on; if not, the device is recorded as
    /// pending. Called by the engine just before a connection would send its first frame.
    func admits(_ device: DeviceID, remote: String) -> Bool {
        if trusted.contains(device) { return true }
        if device == tls.deviceID {
            configuration.logger.notice("refused a connection to this device itself", metadata: ["remote": "\(remote)"])
            return false
        }
        var p = pending[device] ?? PendingDevice(device: device, address: remote, lastSeen: Date(), count: 0)
        p.address = remote
        p.lastSeen = Date()
        p.count += 1
        pending[device] = p
        if pending.count > Self.pendingLimit, let oldest = pending.values.min(by: { $0.lastSeen < $1.lastSeen }) {
            pending[oldest.device] = nil
        }
        configuration.logger.notice(
            "refused a device that is not trusted",
            metadata: [
                "device": "\(device)", "remote": "\(remote)",
                "hint": "trust it with `shoal peer add \(device)` if it is yours"
            ])
        return false
    }

    /// `host:port` of a channel's peer.
    static func address(of channel: any Channel) -> String {
        guard let a = channel.remoteAddress, let ip = a.ipAddress, let port = a.port else { return "?" }
        return ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }

    // MARK: The node ID bound to each device

    /// Checks that `device` may speak as `node`, and binds them when neither is bound yet: the
    /// first hello from a device binds its node ID, for good (Spec/security.md §5). Returns why
    /// it may not, or nil. Bindings are kept in the store, both ways (``Store/bind(_:to:)``).
    func bind(_ node: NodeID, to device: DeviceID) async -> String? {
        let store = await sync.store
        if node == store.nodeID {
            // This device talking to itself (trusted only if the caller trusted its own ID):
            // SyncNode closes it as a self-connection (Spec/replication.md §2).
            if device == tls.deviceID { return nil }
            return "the hello claims this node's own node ID \(node.hex); device \(device.short) may not speak for it"
        }
        let bound: NodeID?
        if let n = nodeOfDevice[device] {
            bound = n
        } else {
            bound = (try? await store.boundNode(of: device)) ?? nil
        }
        if let bound, bound != node {
            return
                "device \(device.short) is bound to node ID \(bound.hex), not \(node.hex): a device keeps the node ID of its first hello"
        }
        let owner: DeviceID?
        if let d = deviceOfNode[node] {
            owner = d
        } else {
            owner = (try? await store.boundDevice(of: node)) ?? nil
        }
        if let owner, owner != device {
            return "node ID \(node.hex) is bound to another device (\(owner.short)), not \(device.short)"
        }
        if bound == nil || owner == nil {
            do throws(ShoalError) {
                try await store.bind(node, to: device)
            } catch {
                configuration.logger.warning(
                    "could not record a device's node ID", metadata: ["device": "\(device.short)", "error": "\(error)"])
                return "this node could not record the node ID of device \(device.short); try again"
            }
            configuration.logger.info(
                "bound a device to its node ID", metadata: ["device": "\(device.short)", "node": "\(node.short)"])
        }
        nodeOfDevice[device] = node
        deviceOfNode[node] = device
        return nil
    }
}
