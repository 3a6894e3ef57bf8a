// IdentityTests: ShoalNode.open gives every data directory a device identity, and keeps it private.

import Foundation
import Testing
import Shoal
@testable import ShoalTrust
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite struct IdentityTests {
    static func temporaryPath() -> String {
        NSTemporaryDirectory() + "shoal-node-\(UUID().uuidString)"
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return info.st_mode & 0o777
    }

    /// The device ID and node ID of the node in `dir`, opened and released.
    static func ids(_ dir: String) async throws -> (DeviceID, NodeID) {
        let node = try await ShoalNode.open(directory: dir)
        return (node.deviceID, node.nodeID)
    }

    @Test func newDirectoryGetsAPrivateIdentity() async throws {
        let dir = Self.temporaryPath() + "/data"
        defer { try? FileManager.default.removeItem(atPath: (dir as NSString).deletingLastPathComponent) }
        let (device, node) = try await Self.ids(dir)
        #expect(Self.mode(dir) == 0o700)
        let files = DeviceIdentity.Files(directory: dir)
        #expect(Self.mode(files.folder) == 0o700)
        #expect(Self.mode(files.key) == 0o600)
        #expect(try DeviceIdentity.load(from: dir).deviceID == device)
        // Reopening keeps both identities.
        let (device2, node2) = try await Self.ids(dir)
        #expect(device2 == device && node2 == node)
        #expect(device.text.count == 63)
    }

    @Test func existingDirectoryIsMadePrivate() async throws {
        let dir = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        _ = try await Self.ids(dir)
        #expect(Self.mode(dir) == 0o700)
    }

    /// A data directory written before identities existed (the store and assets, no `identity/`)
    /// opens with a new device identity and keeps its records and its node ID.
    @Test func directoryWithoutIdentityGetsOneAndKeepsItsData() async throws {
        let dir = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let zone = RecordZone.ID(name: "notes")
        let id = Record.ID(name: "groceries", zone: zone)
        let before: NodeID
        let saved: Record
        do {
            // What the previous release's ShoalNode.open wrote: store.sqlite and assets/.
            let store = try Store.open(directory: dir)
            _ = try AssetStore.open(directory: dir + "/assets")
            try await store.createZone(zone)
            var note = Record(recordType: "Note", id: id)
            note["text"] = .string("milk, eggs")
            saved = try await store.save(note)
            before = store.nodeID
        }
        _ = chmod(dir, 0o755)
        #expect(!FileManager.default.fileExists(atPath: dir + "/identity"))

        let node = try await ShoalNode.open(directory: dir)
        #expect(node.nodeID == before, "the node ID, and so its history in every vector, is kept")
        let record = try await node.record(for: id)
        #expect(record["text"] == .string("milk, eggs"))
        #expect(record.changeTag == saved.changeTag)
        #expect(try DeviceIdentity.load(from: dir).deviceID == node.deviceID)
        #expect(Self.mode(dir) == 0o700)
    }

    @Test func damagedIdentityIsAClearError() async throws {
        let dir = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await Self.ids(dir)
        let files = DeviceIdentity.Files(directory: dir)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: files.certificate))
        do {
            _ = try await ShoalNode.open(directory: dir)
            Issue.record("a garbled certificate was accepted")
        } catch {
            #expect(error.description.contains(files.certificate))
        }
    }
}
