// ReopenedTokenTests: a change token handed out before a power cut, used after it (Spec/store.md §5).

import CShoalPowerCut
@testable import ShoalStore
import ShoalWire
import Testing

extension PowerLossTests {
    /// The hole of multi-node seed 14, directly: a peer's batches applied (`NORMAL` commits) and
    /// fed on in a token; the power cut drops every unsynced write, so those commits and their
    /// change sequence numbers are gone; local writes after reopening take those numbers again —
    /// and the token still returns every one of them.
    @Test func aTokenHandedOutBeforeACutReturnsTheWritesMadeAfterIt() async throws {
        var run = PowerCut(seed: 1)
        let peerDir = ScratchDirectory("shoal-powercut-peer"), dir = ScratchDirectory("shoal-powercut-token")
        let (batches, _, incarnation, _) = try await run.peerBatches(peerDir)
        let zone = run.remoteZone
        do {
            let s = try Store.open(
                directory: dir.path, configuration: run.configuration(vfs: false, checkpointPages: 256))
            try await s.createZone(zone, incarnation: incarnation)
        }
        _ = shoal_powercut_register()
        shoal_powercut_reset(1, 0)
        shoal_powercut_force_mode(1)
        defer { shoal_powercut_force_mode(-1); shoal_powercut_reset(0, 0) }
        var token: ChangeToken? = nil
        var applied = 0
        do {
            let s = try Store.open(
                directory: dir.path, configuration: run.configuration(vfs: true, checkpointPages: 256))
            for batch in batches { try await s.apply(remoteChanges: batch); applied += batch.count }
            for _ in 0..<1_000 {
                let page = try await s.changes(in: zone, since: token)
                token = page.token
                if !page.moreComing { break }
            }
            _ = shoal_powercut_cut_now()
        }
        #expect(await PowerCut.filesClosed())
        shoal_powercut_reset(0, 0)
        let s = try Store.open(directory: dir.path, configuration: run.configuration(vfs: false, checkpointPages: 256))
        // More writes than the cut took sequence numbers: the last of them pass the token's.
        var written: [Record.ID] = []
        for i in 0..<(applied + 8) {
            written.append(try await s.save(PowerCut.record("after-\(i)", zone: zone, i), policy: .allKeys).id)
        }
        var returned = Set<Record.ID>()
        for _ in 0..<1_000 {
            let page = try await s.changes(in: zone, since: token)
            returned.formUnion(page.records.map(\.id))
            token = page.token
            if !page.moreComing { break }
        }
        let missing = written.filter { !returned.contains($0) }
        #expect(
            missing.isEmpty,
            "\(missing.count) of \(written.count) writes made after the cut are missing from the changes since the token"
        )
    }
}
