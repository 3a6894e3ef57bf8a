// ShareAdoptionPowerCutTests: a power cut while a member adopts its owner's share (Spec/store.md §2.3).

import CShoalPowerCut
import ShoalStore
import ShoalWire
@testable import ShoalSync
import Testing
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension PowerLossTests {
    /// A member meets its owner for the first time and adopts the share of the owner's zone. With
    /// the power cut before each event of the member's disk in turn, the member reopens holding
    /// the zone with its share, or not holding the zone at all — never holding it without a share,
    /// which would leave it open to every trusted device (Spec/security.md §6) until some peer
    /// announced the share again.
    @Test func aCutWhileAMemberAdoptsAShareNeverLeavesTheZoneWithoutIt() async throws {
        let zone = RecordZone.ID(name: "team")
        let standInDirectory = ScratchDirectory("shoal-powercut-stand-in")
        var c = Store.Configuration()
        c.synchronous = .normal
        let standIn = try Store.open(directory: standInDirectory.path, configuration: c)
        _ = shoal_powercut_register()
        var cuts = 0, zonesHeld = 0
        for at in UInt64(1)...80 {
            shoal_powercut_reset(0, 0)
            let sim = try await Simulation(
                seed: at, nodes: 2, identities: true,
                storeSetup: NodesPowerCut.storeSetup(checkpointPages: 8))
            try await sim.createSharedZone(zone, on: 0)
            // Only the member's files count events, from its first meeting with the owner.
            shoal_powercut_arm(sim.nodes[1].directory, at, at)
            do {
                try await sim.connect(0, 1)
                _ = try await sim.runRoundsUntilQuiet(maxRounds: 200)
            } catch  where shoal_powercut_is_cut() != 0 {
                // The call the cut interrupted failed; the member is taken down below.
            }
            // Every event of the meeting came before `at`: every earlier cut point was tried.
            guard shoal_powercut_is_cut() != 0 else { break }
            cuts += 1
            while !sim.links.isEmpty { await sim.reset(0) }
            sim.nodes[1].store = standIn
            sim.nodes[1].sync = SyncNode(store: standIn, configuration: sim.configuration, signer: sim.nodes[1].signer)
            #expect(await NodesPowerCut.filesClosed(under: sim.nodes[1].directory + "/"), "cut before event \(at)")
            shoal_powercut_restore()
            let store = try await sim.reopenStore(of: 1)
            let member = SyncNode(store: store, configuration: sim.configuration, signer: sim.nodes[1].signer)
            if (try? await store.zone(zone)) != nil {
                zonesHeld += 1
                #expect(
                    await member.heldShare(zone) != nil,
                    "cut before event \(at): the member holds \(zone) without its share")
            }
        }
        shoal_powercut_reset(0, 0)
        // Cuts fell before the zone was created and after it: both outcomes were tried.
        #expect(cuts > 3 && zonesHeld > 0, "\(cuts) cuts, the zone held after \(zonesHeld)")
    }
}
