// ZoneSharingTLSTests: zone members over real mutual TLS on loopback — what crosses the socket for
// a non-member, a read-only member's changes refused, unsharing and a member's deletion.

import Foundation
import Testing
import ShoalStore
import ShoalWire
import ShoalSync
import ShoalTrust
@testable import ShoalNet

@Suite(.serialized, .timeLimit(.minutes(5))) struct ZoneSharingTLSTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["text"] = .string("secret \(name)")
        return r
    }

    /// A node owning a zone of three notes, shared with nobody yet.
    func owner() async throws -> LoopbackNode {
        let a = try await LoopbackNode.start("owner")
        try await a.createSharedZone(Self.notes, with: [])
        for i in 0..<3 { _ = try await a.store.save(note("n\(i)")) }
        return a
    }

    static func encode(_ frames: [Frame]) -> [UInt8] {
        let encoder = FrameEncoder(options: .init(mode: .none))
        return frames.flatMap { (try? encoder.encode($0)) ?? [] }
    }

    static func hello(zones: [ZoneAnnouncement] = [], node: NodeID = NodeID.random()) -> Frame {
        Frame(type: .hello, payload: HelloMessage(node: node, name: "raw", zones: zones).encoded())
    }

    /// The frames `a` sent a raw client of `identity` that sent `frames`, and whether it closed.
    func exchange(
        _ a: LoopbackNode, as identity: DeviceIdentity, sending frames: [Frame], timeout: Duration = .seconds(90),
        untilErrors: Int? = nil, holdUntil: (@Sendable () async -> Bool)? = nil
    ) async throws -> ([Frame], TLSTestClient.Result) {
        // With `untilErrors`, the client stops once that many error frames have arrived.
        var until: (@Sendable ([UInt8]) -> Bool)? = nil
        if let n = untilErrors {
            until = { bytes in Self.errorFrames(in: bytes) >= n }
        }
        let r = try await TLSTestClient.exchange(
            port: a.port, identity: identity, send: Self.encode(frames), timeout: timeout, until: until,
            holdUntil: holdUntil)
        var reader = FrameReader()
        return ((try? reader.frames(in: r.received)) ?? [], r)
    }

    /// How many error frames `bytes` holds, whole.
    static func errorFrames(in bytes: [UInt8]) -> Int {
        var reader = FrameReader()
        let frames = (try? reader.frames(in: bytes)) ?? []
        return frames.filter { $0.type == .error }.count
    }

    func errorCode(_ frames: [Frame]) -> String? {
        frames.first { $0.type == .error }.flatMap { try? ErrorMessage(decoding: $0.payload) }?.code
    }

    @Test func aTrustedDeviceThatIsNotAMemberLearnsNothingOfTheZone() async throws {
        let a = try await owner()
        defer { Task { await a.stop() } }
        let stranger = try DeviceIdentity.generate()
        await a.net.trust(stranger.deviceID)
        let inc = try await a.store.zone(Self.notes).incarnation
        let subscribe = Frame(
            type: .subscribe,
            payload: SubscribeMessage(
                zone: Self.notes, incarnation: inc, token: nil, knowledge: VersionVector(), window: 8
            ).encoded())
        let (frames, r) = try await exchange(
            a, as: stranger, sending: [Self.hello(), subscribe], timeout: .seconds(60), untilErrors: 1)
        let hello = try #require(frames.first { $0.type == .hello }.flatMap { try? HelloMessage(decoding: $0.payload) })
        #expect(hello.zones.isEmpty, "the owner's hello lists no zone for a device that is not a member")
        // Answered as for a zone the node does not hold: the stranger cannot tell them apart.
        #expect(errorCode(frames) == "zoneNotFound", "\(frames.map(\.type)) closed: \(r.closedByPeer)")
        #expect(!frames.contains { $0.type == .changes })
        // No record crossed the socket, and the zone's name only in the refusal of the client's
        // own subscribe to it.
        #expect(r.received.firstRange(of: Array("secret n0".utf8)) == nil, "a record crossed the socket")
        for f in frames where f.type != .error {
            #expect(
                f.payload.firstRange(of: Array("notes".utf8)) == nil,
                "the zone's name crossed the socket in a \(f.type) frame")
        }
        #expect(await a.net.sync.statistics.refusedForPermission == 1)
    }

    /// A trusted device that is no member announces zones without a share — one new, one named
    /// like the owner's zone in another incarnation — and subscribes to a zone that exists and to
    /// one that does not: nothing is created or changed, and both subscribes get the same answer.
    @Test func aTrustedNonMemberCanNeitherPlantAZoneNorTellWhichExist() async throws {
        let a = try await owner()
        defer { Task { await a.stop() } }
        let stranger = try DeviceIdentity.generate()
        await a.net.trust(stranger.deviceID)
        let planted = [
            ZoneAnnouncement(zone: Self.notes, incarnation: NodeID(high: 7, low: 7)),
            ZoneAnnouncement(zone: RecordZone.ID(name: "team"), incarnation: NodeID(high: 8, low: 8))
        ]
        let inc = try await a.store.zone(Self.notes).incarnation
        let subscribes = [Self.notes, RecordZone.ID(name: "notez")].map {
            Frame(
                type: .subscribe,
                payload: SubscribeMessage(zone: $0, incarnation: inc, token: nil, knowledge: VersionVector(), window: 8)
                    .encoded())
        }
        // The node keeps the connection open (a zone not held is no reason to close): the client
        // stops once both answers have arrived.
        let (frames, _) = try await exchange(
            a, as: stranger, sending: [Self.hello(zones: planted)] + subscribes, timeout: .seconds(60), untilErrors: 2)
        let answers = frames.filter { $0.type == .error }.compactMap { try? ErrorMessage(decoding: $0.payload) }
        #expect(answers.map(\.code) == ["zoneNotFound", "zoneNotFound"], "\(answers)")
        #expect(
            answers.count == 2
                && answers[0].message.replacingOccurrences(of: "notes", with: "notez") == answers[1].message)
        #expect(await a.store.zones().map(\.id) == [Self.notes], "no zone planted")
        #expect(try await a.store.zone(Self.notes).incarnation == inc, "the owner's zone keeps its incarnation")
        #expect(await a.net.sync.statistics.unsignedZoneChangesIgnored == 1)
    }

    @Test func aReadOnlyMemberReceivesTheZoneButItsChangesAreRefused() async throws {
        let a = try await owner()
        defer { Task { await a.stop() } }
        let reader = try DeviceIdentity.generate()
        await a.net.trust(reader.deviceID)
        await a.net.deliver(try await a.net.sync.setMember(reader.deviceID, role: .readOnly, of: Self.notes))
        let inc = try await a.store.zone(Self.notes).incarnation
        // A deletion of n0 stamped with the owner's node ID, and knowledge claiming all of its writes.
        let stored = try await a.store.record(for: Record.ID(name: "n0", zone: Self.notes))
        var v = stored.versionVector
        v.advance(a.store.nodeID, to: HLC(rawValue: v[a.store.nodeID].rawValue + (1 << 16)))
        let tombstone = Record(
            recordType: stored.recordType, id: stored.id, parent: nil, creation: stored.creation, versionVector: v,
            heads: [Record.Head(node: a.store.nodeID, isDeletion: true)], fields: stored.fields, extensions: [])
        let changes = ChangesMessage(
            zone: Self.notes, incarnation: inc, batch: 1, isCaughtUp: true, token: ChangeToken(bytes: []),
            knowledge: VersionVector([(a.store.nodeID, HLC(rawValue: .max))]), records: [tombstone])
        // Its hello announces the zone deleted (same incarnation), without the owner's share.
        let deleted = ZoneAnnouncement(zone: Self.notes, incarnation: inc, isDeleted: true)
        let (frames, r) = try await exchange(
            a, as: reader, sending: [Self.hello(zones: [deleted]), Frame(type: .changes, payload: changes.encoded())])
        let hello = try #require(frames.first { $0.type == .hello }.flatMap { try? HelloMessage(decoding: $0.payload) })
        let announced = try #require(hello.zones.first)
        #expect(announced.zone == Self.notes && announced.share?.role(of: reader.deviceID) == .readOnly)
        #expect(announced.share?.verifiedOwner == a.device, "the share is the owner's, signed")
        #expect(!frames.contains { $0.type == .subscribe }, "the owner never follows a read-only member")
        #expect(errorCode(frames) == "permissionFailure" && r.closedByPeer)
        #expect(!frames.contains { $0.type == .acknowledgement })
        #expect(!(try await a.store.record(for: stored.id)).isDeleted)
        #expect(await a.net.sync.statistics.refusedForPermission == 1)
        #expect(await a.store.zones().map(\.id) == [Self.notes], "the zone outlives a member's unsigned deletion")
        #expect(await a.net.sync.statistics.unsignedZoneChangesIgnored == 1)
    }

    /// The three forgeries sent by an authenticated read-write member over real TLS: a
    /// hello announcing the zone deleted without the owner's share, a deletion stamped with the
    /// owner's own node ID, and caught-up knowledge claiming everything of the owner's. The owner
    /// follows the member (it may write), so the batches are the ones it expects; none changes
    /// anything.
    @Test func aReadWriteMembersForgeriesChangeNothing() async throws {
        let a = try await owner()
        defer { Task { await a.stop() } }
        let writer = try DeviceIdentity.generate()
        await a.net.trust(writer.deviceID)
        await a.net.deliver(try await a.net.sync.setMember(writer.deviceID, role: .readWrite, of: Self.notes))
        let inc = try await a.store.zone(Self.notes).incarnation
        let victim = a.store.nodeID
        let stored = try await a.store.record(for: Record.ID(name: "n0", zone: Self.notes))
        var v = stored.versionVector
        v.advance(victim, to: HLC(rawValue: v[victim].rawValue + (1 << 16)))
        let tombstone = Record(
            recordType: stored.recordType, id: stored.id, parent: nil, creation: stored.creation, versionVector: v,
            heads: [Record.Head(node: victim, isDeletion: true)], fields: stored.fields, extensions: [])
        let live = ZoneAnnouncement(zone: Self.notes, incarnation: inc)
        let deleted = ZoneAnnouncement(zone: Self.notes, incarnation: inc, isDeleted: true)
        func batch(_ records: [Record], knowledge: VersionVector?) -> Frame {
            Frame(
                type: .changes,
                payload: ChangesMessage(
                    zone: Self.notes, incarnation: inc, batch: 1, isCaughtUp: true, token: ChangeToken(bytes: [1]),
                    knowledge: knowledge, records: records
                ).encoded())
        }
        // The device keeps one node ID (security.md §5).
        let me = NodeID.random()
        // 1: the hello says the zone is deleted. Ignored (no share); the connection stays open
        // until the node has read the hello (on a loaded machine that took more than 2 s).
        let (first, r1) = try await exchange(
            a, as: writer, sending: [Self.hello(zones: [deleted], node: me)],
            holdUntil: { await a.net.sync.statistics.unsignedZoneChangesIgnored == 1 })
        #expect(errorCode(first) == nil && !r1.closedByPeer, "\(first.map(\.type))")
        #expect(await a.net.sync.statistics.unsignedZoneChangesIgnored == 1)
        // 2: the owner's own deletion of n0, in the batch the owner asked for.
        let (second, r2) = try await exchange(
            a, as: writer, sending: [Self.hello(zones: [live], node: me), batch([tombstone], knowledge: nil)])
        #expect(second.contains { $0.type == .subscribe }, "the owner follows a read-write member")
        #expect(
            errorCode(second) == "invalidArguments" && r2.closedByPeer,
            "\(second.compactMap { try? ErrorMessage(decoding: $0.payload) })")
        #expect(!second.contains { $0.type == .acknowledgement })
        // 3: an empty caught-up batch whose knowledge claims every write of the owner's.
        let (third, r3) = try await exchange(
            a, as: writer,
            sending: [
                Self.hello(zones: [live], node: me),
                batch([], knowledge: VersionVector([(victim, HLC(rawValue: .max))]))
            ])
        #expect(
            errorCode(third) == "invalidArguments" && r3.closedByPeer,
            "\(third.compactMap { try? ErrorMessage(decoding: $0.payload) })")
        #expect(await a.store.zones().map(\.id) == [Self.notes])
        #expect(!(try await a.store.record(for: stored.id)).isDeleted)
        #expect(await a.net.sync.statistics.refusedBatches == 2)
        #expect(await a.net.sync.statistics.unsignedZoneChangesIgnored == 1)
    }

    /// A read-only member that is a real node: the owner's writes flow to it, its own saves to
    /// the zone fail locally.
    @Test func theOwnersWritesFlowToAReadOnlyMember() async throws {
        let a = try await owner()
        let c = try await LoopbackNode.start("reader")
        defer {
            Task {
                await a.stop(); await c.stop()
            }
        }
        await LoopbackNode.trustEachOther(a, c)
        await a.net.deliver(try await a.net.sync.setMember(c.device, role: .readOnly, of: Self.notes))
        await c.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { (try? await c.store.allRecordIDs(in: Self.notes).count) == 3 })
        #expect(try await c.store.zone(Self.notes).isReadOnly)
        await #expect(throws: ShoalError.self) { try await c.store.save(note("mine")) }
        _ = try await a.store.save(note("later"))
        #expect(
            await eventually { (try? await c.store.record(for: Record.ID(name: "later", zone: Self.notes))) != nil })
        #expect(await c.net.sync.share(of: Self.notes)?.owner == a.device)
    }

    /// A read-write member: the owner's records reach it; unsharing closes its connection at once,
    /// and from then on nothing crosses either way; a member's deletion of the zone stays on it.
    @Test func unsharingAndAMembersDeletionTakeEffectWhileRunning() async throws {
        let a = try await owner()
        let b = try await LoopbackNode.start("member")
        defer {
            Task {
                await a.stop(); await b.stop()
            }
        }
        await LoopbackNode.trustEachOther(a, b)
        await a.net.deliver(try await a.net.sync.setMember(b.device, role: .readWrite, of: Self.notes))
        await b.net.addPeer(host: "127.0.0.1", port: a.port)
        #expect(await eventually { (try? await b.store.allRecordIDs(in: Self.notes).count) == 3 })
        _ = try await b.store.save(note("from-b"))
        #expect(
            await eventually { (try? await a.store.record(for: Record.ID(name: "from-b", zone: Self.notes))) != nil },
            "a read-write member's change reaches the owner")

        // Unshared: b's connection closes at once, b redials and is told of no zone.
        let before = await a.net.sync.connections().count
        #expect(before == 1)
        await a.net.deliver(try await a.net.sync.setMember(b.device, role: nil, of: Self.notes))
        #expect(await eventually { await a.net.sync.replication().isEmpty }, "nothing of the zone is followed any more")
        _ = try await a.store.save(note("after"))
        _ = try await b.store.save(note("from-b-later"))
        #expect(await eventually { await b.net.peers().first?.isConnected == true }, "b redials")
        try await Task.sleep(for: .milliseconds(800))
        #expect(
            (try? await b.store.record(for: Record.ID(name: "after", zone: Self.notes))) == nil,
            "a change reached a device no longer a member")
        #expect(
            (try? await a.store.record(for: Record.ID(name: "from-b-later", zone: Self.notes))) == nil,
            "the owner took a change from a device no longer a member")

        // Shared again, then b deletes the zone: only b's copy goes.
        await a.net.deliver(try await a.net.sync.setMember(b.device, role: .readWrite, of: Self.notes))
        #expect(
            await eventually { (try? await b.store.record(for: Record.ID(name: "after", zone: Self.notes))) != nil })
        try await b.net.sync.deleteZone(Self.notes)
        #expect(
            await eventually { await a.net.sync.statistics.unsignedZoneChangesIgnored > 0 },
            "the owner saw the member's deletion and ignored it")
        #expect(try await a.store.allRecordIDs(in: Self.notes).count == 6)
        #expect(await b.store.zones().isEmpty)
    }
}
