// AssetAccessTests: an asset is served only to a device that may read a zone whose live records
// reference it; to anyone else it is unavailable, exactly like an asset the node does not hold
// (Spec/replication.md §3.7, Spec/security.md).

import Testing
import ShoalSamples
import ShoalSyncSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct AssetAccessTests {
    static let notes = RecordZone.ID(name: "notes")

    /// Three nodes with identities and asset stores, all connected: node 0 owns `notes`, shared
    /// read-only with node 1; node 2 is trusted but not a member. Node 0 holds `first` (a note's
    /// asset field), `second` (in a note's list of assets) and `loose` (referenced by no record).
    struct Setup {
        var sim: Simulation
        var assets: [MemoryAssets]
        var first: Asset, second: Asset, loose: Asset
        var firstBytes: [UInt8], secondBytes: [UInt8]
    }

    static func content(_ n: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    static func setUp(seed: UInt64) async throws -> Setup {
        let sim = try await Simulation(seed: seed, nodes: 3, identities: true)
        var stores = [MemoryAssets]()
        for i in sim.nodes.indices {
            let m = MemoryAssets()
            stores.append(m)
            sim.nodes[i].sync = SyncNode(
                store: sim.nodes[i].store, configuration: sim.configuration, assets: m, signer: sim.nodes[i].signer)
        }
        let firstBytes = content(40_000, seed: seed), secondBytes = content(9_000, seed: seed &+ 1)
        let first = stores[0].add(firstBytes, chunkSize: 4096)
        let second = stores[0].add(secondBytes, chunkSize: 4096)
        let loose = stores[0].add(content(5_000, seed: seed &+ 2), chunkSize: 4096)
        try await sim.nodes[0].sync.createZone(notes)
        let member = try #require(sim.nodes[1].device)
        _ = try await sim.nodes[0].sync.setMember(member, role: .readOnly, of: notes)
        var a = Record(recordType: "Note", id: Record.ID(name: "a", zone: notes))
        a["file"] = .asset(first)
        var b = Record(recordType: "Note", id: Record.ID(name: "b", zone: notes))
        b["files"] = .list(.asset([second]))
        _ = try await sim.nodes[0].store.save(a)
        _ = try await sim.nodes[0].store.save(b)
        #expect(try await sim.runUntilQuiet())
        return Setup(
            sim: sim, assets: stores, first: first, second: second, loose: loose, firstBytes: firstBytes,
            secondBytes: secondBytes)
    }

    /// The `asset-chunk` answers node `n` sends on `conn` to a request for `part` of `asset`.
    static func ask(
        _ sim: Simulation, _ n: Int, on conn: ConnectionID, _ asset: Asset, _ part: AssetRequestMessage.Part
    ) async throws -> [AssetChunkMessage] {
        let out = await sim.nodes[n].sync.receive(
            Frame(type: .assetRequest, payload: AssetRequestMessage(asset: asset, part: part).encoded()), on: conn)
        return try out[conn, default: []].compactMap { o -> AssetChunkMessage? in
            guard case .send(let f) = o, f.type == .assetChunk else { return nil }
            return try AssetChunkMessage(decoding: f.payload)
        }
    }

    /// Starts a fetch on node `n`, runs the network until it is quiet, and waits for the outcome.
    static func fetch(_ asset: Asset, on n: Int, in sim: Simulation) async throws -> Result<Void, any Error> {
        try await sim.route(await sim.nodes[n].sync.fetchAsset(asset), from: n)
        _ = try await sim.runUntilQuiet()
        do { try await sim.nodes[n].sync.waitForAsset(asset); return .success(()) } catch { return .failure(error) }
    }

    /// A trusted device that is not a member of the zone asks for its assets by (hash, size): the
    /// manifest and the chunks are `unavailable`, byte for byte the answer for an asset that does
    /// not exist, and its fetch ends with `assetNotAvailable`. The member is served both assets,
    /// the one in a field and the one in a list.
    @Test func aNonMemberIsToldAnAssetOfAZoneItCannotReadIsUnavailableAndAMemberGetsIt() async throws {
        let s = try await Self.setUp(seed: 601)
        let sim = s.sim
        #expect(await sim.nodes[2].store.zoneAnnouncements().isEmpty, "node 2 is not a member")
        let toOutsider = try sim.connection(of: 0, to: 2)
        let missing = MemoryAssets.asset(of: Self.content(40_000, seed: 99))
        for part in [AssetRequestMessage.Part.manifest, .chunks(first: 0, count: 4)] {
            let absent = try await Self.ask(sim, 0, on: toOutsider, missing, part)
            #expect(absent.map(\.part) == [.unavailable], "\(part)")
            for asset in [s.first, s.second, s.loose] {
                let answer = try await Self.ask(sim, 0, on: toOutsider, asset, part)
                #expect(answer.map(\.part) == absent.map(\.part), "\(asset) \(part): \(answer.map(\.part))")
                #expect(answer.map { $0.encoded() } == [AssetChunkMessage(asset: asset, part: .unavailable).encoded()])
            }
        }
        #expect(await sim.nodes[0].sync.statistics.assetChunksSent == 0)
        let refused = try await Self.fetch(s.first, on: 2, in: sim)
        #expect((refused.failure as? AssetFetchError)?.code == .assetNotAvailable, "\(refused)")
        #expect(s.assets[2].bytes(of: s.first) == nil)
        #expect(await sim.nodes[0].sync.statistics.assetChunksSent == 0)

        // The member: both assets, and not the one no record references.
        #expect((try? await Self.fetch(s.first, on: 1, in: sim).get()) != nil)
        #expect((try? await Self.fetch(s.second, on: 1, in: sim).get()) != nil)
        #expect(s.assets[1].bytes(of: s.first) == s.firstBytes)
        #expect(s.assets[1].bytes(of: s.second) == s.secondBytes)
        let toMember = try sim.connection(of: 0, to: 1)
        #expect(try await Self.ask(sim, 0, on: toMember, s.loose, .manifest).map(\.part) == [.unavailable])
    }

    /// A zone without a share is open: every trusted device reads it, so its assets are served to
    /// every trusted device.
    @Test func anOpenZonesAssetsAreServedToEveryTrustedDevice() async throws {
        let s = try await Self.setUp(seed: 602)
        let open = RecordZone.ID(name: "open")
        try await s.sim.nodes[0].store.createZone(open)
        var r = Record(recordType: "Note", id: Record.ID(name: "c", zone: open))
        r["file"] = .asset(s.first)
        _ = try await s.sim.nodes[0].store.save(r)
        #expect((try? await Self.fetch(s.first, on: 2, in: s.sim).get()) != nil)
        #expect(s.assets[2].bytes(of: s.first) == s.firstBytes)
    }

    /// Deleting the only record that references an asset, or changing its field to another, stops
    /// the asset being served to members too — also on a connection that was just sent its
    /// manifest (the chunk requests after it are answered from a remembered grant otherwise).
    @Test func anAssetNoLiveRecordReferencesIsNotServedToAMember() async throws {
        let s = try await Self.setUp(seed: 603)
        let sim = s.sim
        let toMember = try sim.connection(of: 0, to: 1)
        guard case .manifest? = try await Self.ask(sim, 0, on: toMember, s.first, .manifest).first?.part else {
            Issue.record("the member was not sent the manifest")
            return
        }
        #expect(try await Self.ask(sim, 0, on: toMember, s.first, .chunks(first: 0, count: 2)).count == 2)
        try await sim.nodes[0].store.delete(Record.ID(name: "a", zone: Self.notes))
        #expect(
            try await Self.ask(sim, 0, on: toMember, s.first, .chunks(first: 2, count: 2)).map(\.part) == [.unavailable]
        )
        #expect(try await Self.ask(sim, 0, on: toMember, s.first, .manifest).map(\.part) == [.unavailable])

        var b = try await sim.nodes[0].store.record(for: Record.ID(name: "b", zone: Self.notes))
        b["files"] = .list(.asset([s.loose]))
        _ = try await sim.nodes[0].store.save(b)
        #expect(try await Self.ask(sim, 0, on: toMember, s.second, .manifest).map(\.part) == [.unavailable])
        guard case .manifest? = try await Self.ask(sim, 0, on: toMember, s.loose, .manifest).first?.part else {
            Issue.record("the asset the record now references was not served")
            return
        }
        try await sim.notifyChanges(node: 0)
        #expect(try await sim.runUntilQuiet())
        let refused = try await Self.fetch(s.first, on: 1, in: sim)
        #expect((refused.failure as? AssetFetchError)?.code == .assetNotAvailable, "\(refused)")
    }

    /// A grant remembered for a connection holds only while the device may still read the zone:
    /// a share that takes its access away ends it at the next request, even before the
    /// connection restarts.
    @Test func aShareThatEndsAccessEndsTheGrantAtOnce() async throws {
        let s = try await Self.setUp(seed: 604)
        let sim = s.sim
        let toMember = try sim.connection(of: 0, to: 1)
        #expect(await sim.nodes[0].sync.mayServe(s.first, on: toMember))
        let held = try #require(await sim.nodes[0].sync.share(of: Self.notes))
        var share = held.share
        share.members = []
        share.serial &+= 1
        let signer = try #require(sim.nodes[0].signer)
        try await sim.nodes[0].sync.keep(signer.sign(share), owner: signer.device)  // no restart
        #expect(await !sim.nodes[0].sync.mayServe(s.first, on: toMember))
    }
}

extension Result {
    /// The error, when this is a failure.
    fileprivate var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
