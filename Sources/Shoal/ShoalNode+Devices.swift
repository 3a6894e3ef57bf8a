// ShoalNode+Devices: the devices this node trusts, kept in its store, and the ones that were refused.

import Foundation

extension ShoalNode {
    /// The longest device name, in UTF-8 bytes.
    public static let maxDeviceNameBytes = 256

    /// The trusted devices kept in `store`.
    /// - Throws: `ShoalError` `internalError` when the stored list cannot be read.
    static func loadTrustedDevices(from store: Store) async throws(ShoalError) -> [TrustedDevice] {
        guard let bytes = try await store.syncValue(.trustedDevices) else { return [] }
        do {
            return try JSONDecoder().decode([TrustedDevice].self, from: Data(bytes))
        } catch {
            throw ShoalError.internalError("the trusted devices kept in the store cannot be read: \(error)")
        }
    }

    func saveTrustedDevices() async throws(ShoalError) {
        let bytes: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            bytes = try encoder.encode(devices)
        } catch {
            throw ShoalError.internalError("the trusted devices cannot be encoded: \(error)")
        }
        // The user's own write: durable once the call returns, as a save is (Spec/store.md §2.3).
        try await store.setSyncValue(.trustedDevices, Array(bytes), durably: true)
    }

    /// Trusts `device`: its connections are accepted from now on, without a restart, and when
    /// `address` (`host:port`) is given this node dials it there while it is online. Trusting a
    /// device already trusted sets its name (when given) and adds the address.
    /// - Returns: the device as now trusted.
    /// - Throws: `ShoalError` `invalidArguments` for this device's own ID, an address that is
    ///   not `host:port`, or a name longer than ``maxDeviceNameBytes``; `internalError` when the
    ///   store cannot save it.
    @discardableResult
    public func trustDevice(_ device: DeviceID, name: String? = nil, address: String? = nil) async throws(ShoalError)
        -> TrustedDevice
    {
        guard device != deviceID else {
            throw .invalidArguments(
                "\(device) is this device's own ID; trust the ID another device prints with `shoal id`")
        }
        let endpoint = try address.map { a throws(ShoalError) in try Self.endpoint(a) }
        if let name, name.utf8.count > Self.maxDeviceNameBytes {
            throw .invalidArguments("a device name is at most \(Self.maxDeviceNameBytes) bytes, not \(name.utf8.count)")
        }
        var entry = devices.first { $0.device == device } ?? TrustedDevice(device: device)
        if let name { entry.name = name }
        if let endpoint, !entry.addresses.contains(endpoint.text) { entry.addresses.append(endpoint.text) }
        let previous = devices
        if let i = devices.firstIndex(where: { $0.device == device }) {
            devices[i] = entry
        } else {
            devices.append(entry)
        }
        do {
            try await saveTrustedDevices()
        } catch {
            devices = previous
            throw error
        }
        await network.trust(device)
        if let endpoint, started { await network.addPeer(host: endpoint.host, port: endpoint.port, device: device) }
        return entry
    }

    /// Stops trusting `device`, or forgets it when it is only pending: its open connections
    /// close at once and later ones are refused; its addresses are no longer dialled.
    /// - Throws: `ShoalError` `invalidArguments` when the device is neither trusted nor
    ///   pending; `internalError` when the store cannot save the change.
    public func removeDevice(_ device: DeviceID) async throws(ShoalError) {
        guard let i = devices.firstIndex(where: { $0.device == device }) else {
            guard await network.pendingDevices().contains(where: { $0.device == device }) else {
                throw .invalidArguments("\(device) is neither a trusted nor a pending device (see `shoal peer list`)")
            }
            await network.distrust(device)
            return
        }
        let removed = devices.remove(at: i)
        do {
            try await saveTrustedDevices()
        } catch {
            devices.insert(removed, at: i)
            throw error
        }
        await network.distrust(device)
        for a in removed.addresses {
            guard let e = try? Self.endpoint(a),
                !peerAddresses.contains(where: { $0.host == e.host && $0.port == e.port })
            else { continue }
            await network.removePeer(host: e.host, port: e.port)
        }
    }

    /// The trusted devices, in the order they were added.
    public func trustedDevices() -> [TrustedDevice] { devices }

    /// The devices that connected (or were dialled) since the node went online and were refused
    /// because they are not trusted, most recent first: their ID, address, last time and count.
    public func pendingDevices() async -> [PendingDevice] { await network.pendingDevices() }

    /// Dials the addresses of every trusted device.
    func dialTrustedDevices() async {
        for d in devices {
            for a in d.addresses {
                if let e = try? Self.endpoint(a) { await network.addPeer(host: e.host, port: e.port, device: d.device) }
            }
        }
    }

    /// `host:port` parsed: a host (an IPv6 address in brackets) and a port 1–65535.
    static func endpoint(_ text: String) throws(ShoalError) -> (host: String, port: Int, text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else {
            throw .invalidArguments("\"\(text)\" is not an address: give HOST:PORT, e.g. 192.168.1.20:7400")
        }
        let host = String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" }) else {
            throw .invalidArguments("\"\(text)\" has no host: give HOST:PORT, e.g. 192.168.1.20:7400")
        }
        return (host, port, host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)")
    }
}
