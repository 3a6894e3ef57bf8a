// UpgradeTests: data directories written by the release before device identities open and lose nothing.

import Foundation
import Testing
import Shoal
@testable import ShoalSync
@testable import ShoalTrust
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Copies of `Fixtures/pre-identity/a` and `b` (see its README: made by the `shoal` binary of the
/// commit before identities) opened with the current code: each gets a device identity and keeps
/// its node ID, records, tombstone, asset, knowledge and its positions in the other's feed; the
/// two then resume replication over mutual TLS without resending what they hold.
@Suite(.serialized, .timeLimit(.minutes(5))) struct UpgradeTests {
    /// What the old binary wrote and reported (the fixture's README).
    enum Old {
        static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Fixtures/pre-identity"
        ).path
        static let nodeA = "114950c8982c172338ad5ef0405d4be1"
        static let nodeB = "1f93118e02601f8cbd1bcef186235d86"
        static let digest = "c8528f39003e887d2cd6d524cd4505980e19123577d7bae6ff9aaf278b1edcfe"
        static let changeTags = [
            "groceries": "b7da4663a7692d40", "trip": "0b2d5df4ba3f10d2",
            "from-b": "2e6013ae27352507", "receipt": "3ffa19639b4c0257"
        ]
        static let asset = "484bbc2ff09c8f287e70feb123da13b101802f62e3452402b7e4b0a36b27cbd0"
        static let receipt = "receipt: milk 1.20, eggs 2.40\n"
        /// The key under which the old `SyncNode` kept its position in `peer`'s feed of `notes`.
        static func positionKey(_ peer: String) -> String { "position\u{1}\(peer)\u{1}notes\u{1}_defaultOwner" }
    }

    static let notes = RecordZone.ID(name: "notes")

    static func id(_ name: String) -> Record.ID { Record.ID(name: name, zone: notes) }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return info.st_mode & 0o777
    }

    /// A fresh copy of fixture `name` ("a" or "b") under `root`, with the old release's
    /// permissions (it made data directories 0755): tests must never open the fixture itself.
    static func copy(_ name: String, to root: String) throws -> String {
        let dir = root + "/" + name
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Old.fixtures + "/" + name, toPath: dir)
        _ = chmod(dir, 0o755)
        return dir
    }

    static func temporaryRoot() -> String { NSTemporaryDirectory() + "shoal-upgrade-\(UUID().uuidString)" }

    static func node(_ hex: String) throws -> NodeID { try #require(NodeID(hex: hex)) }

    @Test(arguments: [("a", Old.nodeA), ("b", Old.nodeB)])
    func eachDirectoryGetsAnIdentityAndKeepsItsNodeID(name: String, nodeHex: String) async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = try Self.copy(name, to: root)
        let files = DeviceIdentity.Files(directory: dir)
        #expect(!FileManager.default.fileExists(atPath: files.folder), "the fixture predates identities")

        let before = try Self.node(nodeHex)
        let node = try await ShoalNode.open(directory: dir)
        #expect(node.nodeID == before, "the node ID, and so its history in every vector, is kept")
        #expect(Self.mode(dir) == 0o700)
        #expect(Self.mode(files.folder) == 0o700)
        #expect(Self.mode(files.key) == 0o600, "the private key is the owner's alone")
        #expect(Self.mode(files.certificate) == 0o644, "the certificate is public")
        #expect(try DeviceIdentity.load(from: dir).deviceID == node.deviceID)
        await node.shutdown()

        // The identity made on the first open is the one kept: peers pin it.
        let again = try await ShoalNode.open(directory: dir)
        #expect(again.deviceID == node.deviceID)
        #expect(again.nodeID == node.nodeID)
    }

    @Test(arguments: ["a", "b"])
    func recordsTombstoneAssetAndKnowledgeAreKept(name: String) async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let node = try await ShoalNode.open(directory: try Self.copy(name, to: root))
        let a = try Self.node(Old.nodeA), b = try Self.node(Old.nodeB)

        // The digest covers every live record's canonical bytes, system fields and vectors included.
        let digest = try await node.digest(of: Self.notes)
        #expect(digest.description == Old.digest)
        #expect(digest.recordCount == 4)

        for (record, tag) in Old.changeTags {
            #expect(try await node.record(for: Self.id(record)).changeTag == tag, "\(record)")
        }
        let groceries = try await node.record(for: Self.id("groceries"))
        #expect(groceries["title"] == .string("Milk and eggs"))
        #expect(groceries["count"] == .int64(3))
        #expect(groceries["done"] == .bool(false))
        #expect(groceries["due"] == .date(Timestamp(millisecondsSince1970: 1_795_341_600_000)))
        #expect(groceries["tags"] == .list(.string(["home", "urgent"])))
        // Made on a, edited on b: both writers stay in its vector.
        #expect(Set(groceries.versionVector.entries.map(\.node)) == [a, b])
        #expect(groceries.createdBy == a && groceries.modifiedBy == b)

        let trip = try await node.record(for: Self.id("trip"))
        #expect(trip["title"] == .string("Lisbon and Porto"))
        #expect(trip["budget"] == .double(1250.5))
        #expect(trip["where"] == .location(Location(latitude: 38.72, longitude: -9.14)))
        #expect(trip["link"] == .reference(Reference(recordID: Self.id("groceries"))))
        #expect(trip.versionVector.entries.map(\.node) == [a])

        let fromB = try await node.record(for: Self.id("from-b"))
        #expect(fromB["pages"] == .list(.int64([1, 2, 3])))
        #expect(fromB.versionVector.entries.map(\.node) == [b])

        let all = try await node.changes(in: Self.notes, since: nil)
        #expect(!all.moreComing)
        #expect(
            all.deletions.map(\.id) == [Self.id("obsolete")], "the tombstone is kept, so the deletion still replicates")
        #expect(all.deletions.first?.deletion.node == a)

        // The asset is held whole, so this node can still serve it.
        guard case .asset(let asset)? = try await node.record(for: Self.id("receipt"))["photo"] else {
            Issue.record("receipt has no asset in photo")
            return
        }
        #expect(asset.hash.hex == Old.asset && asset.size == 30)
        #expect(try node.assets.isComplete(asset))
        var bytes = [UInt8]()
        for try await chunk in try node.assets.contents(of: asset) { bytes += chunk }
        #expect(String(decoding: bytes, as: UTF8.self) == Old.receipt)

        // What the node adopted from its peer is still known: a reconnect need not resend it.
        let knowledge = await node.sync.knowledge(of: Self.notes)
        #expect(Set(knowledge.entries.map(\.node)) == [a, b])
        for r in all.records {
            #expect(r.versionVector.isDominated(by: knowledge), "\(r.id.name) \(r.versionVector) beyond \(knowledge)")
        }
    }

    /// Each node's position in the other's feed is kept under the key the old code used, which is
    /// the key the current code reads, and resumes there: from it, the other's feed holds only
    /// what the holder already knows (a full resend would be every record and the tombstone).
    @Test func peerPositionsAreKeptAndResumeWhereTheyStopped() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try await ShoalNode.open(directory: try Self.copy("a", to: root))
        let b = try await ShoalNode.open(directory: try Self.copy("b", to: root))
        for (holder, peer) in [(a, b), (b, a)] {
            let key = Old.positionKey(peer.nodeID.hex)
            #expect(
                SyncStateKey.position(peer: peer.nodeID, zone: Self.notes).rawValue == key,
                "the current code reads the old key")
            let stored = try #require(
                try await holder.store.syncValue(.position(peer: peer.nodeID, zone: Self.notes)),
                "\(holder.nodeID.short) lost its position in \(peer.nodeID.short)'s feed")
            let incarnation = try await holder.store.zone(Self.notes).incarnation
            let token = try #require(
                await holder.sync.position(peer: peer.nodeID, zone: Self.notes, incarnation: incarnation),
                "the current code does not accept the stored position")
            #expect(token.bytes == stored)

            let fromPosition = try await peer.changes(in: Self.notes, since: token)
            let everything = try await peer.changes(in: Self.notes, since: nil)
            #expect(everything.records.count == 5)
            #expect(fromPosition.records.count < everything.records.count)
            let knowledge = await holder.sync.knowledge(of: Self.notes)
            for r in fromPosition.records {
                #expect(
                    r.versionVector.isDominated(by: knowledge),
                    "\(r.id.name) from the position is news to \(holder.nodeID.short)")
            }
        }
        // b stopped at the end of a's feed; a, one change (trip, which it wrote) before the end of b's.
        let bInA: ChangeToken = try #require(
            await b.sync.position(
                peer: a.nodeID, zone: Self.notes, incarnation: try await b.store.zone(Self.notes).incarnation))
        let aInB: ChangeToken = try #require(
            await a.sync.position(
                peer: b.nodeID, zone: Self.notes, incarnation: try await a.store.zone(Self.notes).incarnation))
        #expect(try await a.changes(in: Self.notes, since: bInA).records.isEmpty)
        #expect(try await b.changes(in: Self.notes, since: aInB).records.map(\.id.name) == ["trip"])
    }

    /// The two upgraded nodes trust each other's new device IDs and replicate over mutual TLS:
    /// nothing they already hold is sent again, their node IDs are bound to the new devices, and
    /// new writes replicate both ways.
    @Test func upgradedPairResumesOverTLS() async throws {
        let root = Self.temporaryRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try await ShoalNode.open(directory: try Self.copy("a", to: root))
        let b = try await ShoalNode.open(directory: try Self.copy("b", to: root))
        defer {
            Task {
                await a.shutdown(); await b.shutdown()
            }
        }
        let port = try await a.listen(host: "127.0.0.1", port: 0)
        try await a.trustDevice(b.deviceID, name: "b")
        try await b.trustDevice(a.deviceID, name: "a", address: "127.0.0.1:\(port)")
        try await b.listen(host: "127.0.0.1", port: 0)

        // Both sides follow the zone and have caught up with the other.
        func caughtUp(_ n: ShoalNode, with peer: NodeID) async -> Bool {
            await n.sync.replication().contains {
                $0.peer == peer && $0.zone == Self.notes && $0.receivedCaughtUp && $0.sentCaughtUp
            }
        }
        func bothCaughtUp() async -> Bool {
            guard await caughtUp(a, with: b.nodeID) else { return false }
            return await caughtUp(b, with: a.nodeID)
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !(await bothCaughtUp()), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(await bothCaughtUp(), "the upgraded nodes did not catch up over TLS")
        #expect(await a.sync.statistics.recordsReceived == 0, "a was sent records it held")
        #expect(await b.sync.statistics.recordsReceived == 0, "b was sent records it held")
        #expect(await a.sync.statistics.refusedBatches == 0)
        #expect(await b.sync.statistics.refusedBatches == 0)
        #expect(await b.peers().first?.node == a.nodeID)
        #expect(await b.peers().first?.device == a.deviceID)

        // Each old node ID is now bound to its new device (NetworkNode's sync values).
        #expect(
            SyncStateKey.boundDevice(of: b.nodeID).rawValue == "node-device\u{1}" + b.nodeID.hex,
            "the current code reads the old key")
        #expect(try await a.store.syncValue(.boundDevice(of: b.nodeID)) == b.deviceID.bytes)
        #expect(try await b.store.syncValue(.boundDevice(of: a.nodeID)) == a.deviceID.bytes)

        var fromA = Record(recordType: "Note", id: Self.id("after-upgrade-a"))
        fromA["title"] = .string("written on a after the upgrade")
        try await a.save(fromA)
        var fromB = Record(recordType: "Note", id: Self.id("after-upgrade-b"))
        fromB["title"] = .string("written on b after the upgrade")
        try await b.save(fromB)
        func bothArrived() async -> Bool {
            guard (try? await b.record(for: fromA.id)) != nil else { return false }
            return (try? await a.record(for: fromB.id)) != nil
        }
        while !(await bothArrived()), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await b.record(for: fromA.id)["title"] == .string("written on a after the upgrade"))
        #expect(try await a.record(for: fromB.id)["title"] == .string("written on b after the upgrade"))
        #expect(await b.sync.statistics.recordsReceived == 1, "b received only the new record")
        #expect(await a.sync.statistics.recordsReceived == 1, "a received only the new record")
        #expect(try await a.digest(of: Self.notes) == b.digest(of: Self.notes))
        #expect(try await a.digest(of: Self.notes).recordCount == 6)
        await a.shutdown()
        await b.shutdown()
    }
}
