// TrustedDeviceTests: ShoalNode keeps its trusted devices in its store, refuses bad input, and pairs over TLS.

import Foundation
import Testing
import Shoal
import ShoalStore

@Suite(.serialized, .timeLimit(.minutes(5))) struct TrustedDeviceTests {
    static func temporaryPath() -> String {
        NSTemporaryDirectory() + "shoal-devices-\(UUID().uuidString)"
    }

    /// A device ID from `seed`, as another machine's would be.
    static func device(_ seed: UInt8) -> DeviceID { DeviceID(bytes: [UInt8](repeating: seed, count: 32))! }

    @Test func trustedDevicesAreKeptInTheStore() async throws {
        let dir = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let node = try await ShoalNode.open(directory: dir)
            try await node.trustDevice(Self.device(1), name: "laptop", address: "192.168.1.20:7400")
            try await node.trustDevice(Self.device(2))
            // Trusting again names it and adds an address; nothing is duplicated.
            try await node.trustDevice(Self.device(1), name: "old laptop", address: "[fe80::1]:7400")
            try await node.trustDevice(Self.device(1), address: "192.168.1.20:7400")
            await node.shutdown()
        }
        let node = try await ShoalNode.open(directory: dir)
        let devices = await node.trustedDevices()
        #expect(devices.map(\.device) == [Self.device(1), Self.device(2)])
        #expect(devices[0].name == "old laptop" && devices[0].addresses == ["192.168.1.20:7400", "[fe80::1]:7400"])
        #expect(devices[1].name == "" && devices[1].addresses.isEmpty)
        try await node.removeDevice(Self.device(1))
        #expect(await node.trustedDevices().map(\.device) == [Self.device(2)])
    }

    /// Trusting and removing a device are the user's own writes: they commit `FULL`, so a power
    /// cut cannot undo one once its call returned (a removed device trusted again after the cut).
    @Test func trustingAndRemovingADeviceCommitFull() async throws {
        let dir = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let node = try await ShoalNode.open(directory: dir)
        try await node.store.setSyncValue(.knowledge(zone: RecordZone.ID(name: "notes")), [1])
        #expect(try await node.store.sqliteSynchronous() == 1)
        try await node.trustDevice(Self.device(5))
        #expect(try await node.store.sqliteSynchronous() == 2)
        try await node.store.setSyncValue(.knowledge(zone: RecordZone.ID(name: "notes")), [2])
        try await node.removeDevice(Self.device(5))
        #expect(try await node.store.sqliteSynchronous() == 2)
        await node.shutdown()
    }

    @Test func badInputIsAShoalError() async throws {
        let dir = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let node = try await ShoalNode.open(directory: dir)
        for address in ["192.168.1.20", "host:0", "host:70000", ":7400", "a b:1"] {
            await #expect(throws: ShoalError.self, "address \(address)") {
                try await node.trustDevice(Self.device(3), address: address)
            }
        }
        await #expect(throws: ShoalError.self, "its own ID") { try await node.trustDevice(node.deviceID) }
        await #expect(throws: ShoalError.self, "a long name") {
            try await node.trustDevice(Self.device(3), name: String(repeating: "x", count: 257))
        }
        await #expect(throws: ShoalError.self, "not trusted") { try await node.removeDevice(Self.device(4)) }
        #expect(await node.trustedDevices().isEmpty, "nothing was kept from refused calls")
    }

    /// Two nodes in-process: B refuses A until it trusts it (A is pending on B), then they sync.
    @Test func pairingTakesEffectWithoutARestart() async throws {
        let root = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try await ShoalNode.open(directory: root + "/a"), b = try await ShoalNode.open(directory: root + "/b")
        let notes = RecordZone.ID(name: "notes")
        try await b.createZone(notes)
        var r = Record(recordType: "Note", id: Record.ID(name: "n1", zone: notes))
        r["text"] = .string("hello")
        try await b.save(r)
        let port = try await b.listen(host: "127.0.0.1", port: 0)
        try await a.trustDevice(b.deviceID, name: "b", address: "127.0.0.1:\(port)")
        try await a.listen(host: "127.0.0.1", port: 0)
        defer {
            Task {
                await a.shutdown(); await b.shutdown()
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while await b.pendingDevices().isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(await b.pendingDevices().first?.device == a.deviceID)
        #expect((try? await a.record(for: r.id)) == nil)
        try await b.trustDevice(a.deviceID, name: "a")
        #expect(await b.pendingDevices().isEmpty)
        // Trusted, A is told of no zone until B shares one with it.
        try await b.shareZone(notes, with: a.deviceID, role: .readOnly)
        while (try? await a.record(for: r.id)) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await a.record(for: r.id)["text"] == .string("hello"))
        #expect(await a.peers().first?.device == b.deviceID)
    }
}
