// Store+DeviceBindings: which device speaks for which node ID (Spec/security.md §5), kept here so
// that the transport that binds them and the engine that checks writes read one key space.

package import ShoalWire

extension Store {
    /// The node ID bound to `device`, if any.
    /// - Throws: `internalError` if SQLite fails.
    package func boundNode(of device: DeviceID) throws(ShoalError) -> NodeID? {
        try syncValue(.boundNode(of: device)).flatMap { NodeID(hex: String(decoding: $0, as: UTF8.self)) }
    }

    /// The device bound to `node`, if any.
    /// - Throws: `internalError` if SQLite fails.
    package func boundDevice(of node: NodeID) throws(ShoalError) -> DeviceID? {
        try syncValue(.boundDevice(of: node)).flatMap { DeviceID(bytes: $0) }
    }

    /// Binds `node` and `device` to each other, for good: the reverse binding (node → device)
    /// first, so a crash in between leaves a half that the next ``bind(_:to:)`` completes. Both
    /// commit as the node's own writes (`FULL` by default): a binding a power cut undid would let
    /// another device take the node ID (Spec/security.md §5).
    /// - Throws: `internalError` if SQLite fails.
    package func bind(_ node: NodeID, to device: DeviceID) throws(ShoalError) {
        try setSyncValue(.boundDevice(of: node), device.bytes, durably: true)
        try setSyncValue(.boundNode(of: device), Array(node.hex.utf8), durably: true)
    }
}
