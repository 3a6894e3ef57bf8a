// SyncStateKeyTests: the texts of replication-state keys are those earlier stores wrote.

import Testing
import ShoalStore
import ShoalWire

@Suite struct SyncStateKeyTests {
    static let zone = RecordZone.ID(name: "notes", owner: "alice")
    static let node = NodeID(high: 0x0102_0304_0506_0708, low: 0x090a_0b0c_0d0e_0f10)

    /// A store written by an earlier version keeps its state under these texts: a key spelled
    /// otherwise would lose every position, knowledge, share and device binding on upgrade.
    @Test func keysAreSpelledAsEarlierStoresWroteThem() throws {
        let device = try #require(DeviceID(bytes: [UInt8](repeating: 0xab, count: 32)))
        let hex = Self.node.hex
        let expected: [(SyncStateKey, String)] = [
            (.position(peer: Self.node, zone: Self.zone), "position\u{1}\(hex)\u{1}notes\u{1}alice"),
            (.resync(peer: Self.node, zone: Self.zone), "resync\u{1}\(hex)\u{1}notes\u{1}alice"),
            (.knowledge(zone: Self.zone), "knowledge\u{1}notes\u{1}alice"),
            (.share(zone: Self.zone), "share\u{1}notes\u{1}alice"),
            (.boundNode(of: device), "device\u{1}" + String(repeating: "ab", count: 32)),
            (.boundDevice(of: Self.node), "node-device\u{1}\(hex)"),
            (.trustedDevices, "trusted-devices")
        ]
        for (key, text) in expected { #expect(key.rawValue == text, "\(key)") }
        #expect(SyncStateKey.knowledge(zone: Self.zone).description == "knowledge/notes/alice")
    }

    /// Values stored under typed keys read back, and nil removes them.
    @Test func valuesRoundTripAndRemove() async throws {
        let d = TempDirectory()
        let s = try await Store.temporary(d)
        let key = SyncStateKey.position(peer: Self.node, zone: Self.zone)
        #expect(try await s.syncValue(key) == nil)
        try await s.setSyncValue(key, [1, 2])
        #expect(try await s.syncValue(key) == [1, 2])
        #expect(try await s.syncValue(.resync(peer: Self.node, zone: Self.zone)) == nil)
        try await s.setSyncValue(key, nil)
        #expect(try await s.syncValue(key) == nil)
    }
}
