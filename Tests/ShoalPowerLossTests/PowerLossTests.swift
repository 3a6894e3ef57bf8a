// PowerLossTests: the store after power cuts injected below it (Spec/store.md §2.3).

import CShoalPowerCut
import Testing
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The power-cut VFS holds process-wide state, so these tests run one at a time.
@Suite(.serialized) struct PowerLossTests {
    /// Runs `seeds` seeds from `first`, one cut each, and adds up what the checks found.
    static func soak(first: UInt64, seeds: Int, knowledgeBeforeVersions: Bool = false) async -> PowerCutFindings {
        var total = PowerCutFindings()
        for seed in first..<(first + UInt64(seeds)) {
            var run = PowerCut(seed: seed)
            run.knowledgeBeforeVersions = knowledgeBeforeVersions
            total.add(await run.run())
        }
        return total
    }

    /// The soak: every seed cuts the power once at a seeded point, and after reopening nothing
    /// acknowledged is lost, the store opens and is intact, knowledge claims only what is held,
    /// and fetching again from that knowledge converges with the peer. 100 seeds by default;
    /// `SHOAL_POWERLOSS_SEEDS=5000 swift test --filter PowerLoss` for a long run
    /// (`SHOAL_POWERLOSS_FIRST_SEED` moves the start).
    @Test func powerCutsLoseNothingAcknowledged() async {
        let env = ProcessInfo.processInfo.environment
        let seeds = env["SHOAL_POWERLOSS_SEEDS"].flatMap { Int($0) } ?? 100
        let first = env["SHOAL_POWERLOSS_FIRST_SEED"].flatMap { UInt64($0) } ?? 1
        let found = await Self.soak(first: first, seeds: seeds)
        print(found.summary(seeds: seeds))
        for line in found.failures.prefix(20) { Issue.record("\(line)") }
        #expect(found.failed == 0, "\(found.summary(seeds: seeds))")
        #expect(found.cuts == seeds)
        // The cuts do something: unsynced sectors are dropped, some cuts land inside a call, and
        // some undo replicated batches whose apply had returned (then fetched again).
        #expect(found.sectorsDropped > 0)
        #expect(found.cutsInsideACall > 0)
        #expect(found.refetchedBatches > 0)
    }

    /// The checks catch a broken ordering: with the log's fsync removed (the VFS reports it done
    /// and keeps the writes unsynced), `FULL` commits are no longer durable, and the same soak
    /// reports acknowledged saves lost.
    @Test func aRemovedLogSyncLosesAcknowledgedSaves() async {
        shoal_powercut_ignore_log_syncs(1)
        let found = await Self.soak(first: 1, seeds: 40)
        shoal_powercut_ignore_log_syncs(0)
        print("without log syncs: " + found.summary(seeds: 40))
        #expect(found.lostAcknowledged > 0, "a removed sync went unnoticed: \(found.summary(seeds: 40))")
    }

    /// The checks catch knowledge that outlives its versions: committed in a transaction of its
    /// own before the batch it claims (an ordering bug replication could have), a cut inside the
    /// apply leaves a claim the store does not hold, and the soak reports overclaims.
    @Test func knowledgeCommittedBeforeItsVersionsIsCaught() async {
        let found = await Self.soak(first: 1, seeds: 100, knowledgeBeforeVersions: true)
        print("knowledge before versions: " + found.summary(seeds: 100))
        #expect(
            found.overclaims > 0, "knowledge committed before its versions went unnoticed: \(found.summary(seeds: 100))"
        )
    }
}
