// Store+DeviceBindings: which device speaks for which node ID (Spec/security.md §5), kept here so
// that the transport that binds them and the engine that checks writes read one key space.

package import ShoalWire

extension Store {
    /// The sync value naming the node ID bound to a device (its hex, as text).
    static func nodeKey(of device: DeviceID) -> String { "device\u{1}" + device.hex }
    /// The sync value naming the device bound to a node ID (the device ID's bytes).
    static func deviceKey(of node: NodeID) -> String { "node-device\u{1}" + node.hex }

    /// The node ID bound to `device`, if any.
    /// - Throws: `internalError` if SQLite fails.
    package func boundNode(of device: DeviceID) throws(ShoalError) -> NodeID? {
        try syncValue(Self.nodeKey(of: device)).flatMap { NodeID(hex: String(decoding: $0, as: UTF8.self)) }
    }

    /// The device bound to `node`, if any.
    /// - Throws: `internalError` if SQLite fails.
    package func boundDevice(of node: NodeID) throws(ShoalError) -> DeviceID? {
        try syncValue(Self.deviceKey(of: node)).flatMap { DeviceID(bytes: $0) }
    }

    /// Binds `node` and `device` to each other, for good: the reverse binding (node → device)
    /// first, so a crash in between leaves a half that the next ``bind(_:to:)`` completes. Both
    /// commit as the node's own writes (`FULL` by default): a binding a power cut undid would let
    /// another device take the node ID (Spec/security.md §5).
    /// - Throws: `internalError` if SQLite fails.
    package func bind(_ node: NodeID, to device: DeviceID) throws(ShoalError) {
        try setSyncValue(Self.deviceKey(of: node), device.bytes, durably: true)
        try setSyncValue(Self.nodeKey(of: device), Array(node.hex.utf8), durably: true)
    }
}
