// InboundAdmissionTests: which accepted connection gives its place up to a newer one, which are refused, and what is logged.

import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing
import ShoalTestSupport
import ShoalWire
@testable import ShoalNet

@Suite struct InboundAdmissionTests {
    typealias Lines = LogLines

    static let trusted = DeviceID(bytes: [UInt8](repeating: 7, count: 32))!
    static let stranger = DeviceID(bytes: [UInt8](repeating: 9, count: 32))!

    /// An admission of `total` places, `perAddress` from one address, trusting ``trusted``.
    static func admission(total: Int, perAddress: Int = 16, lines: Lines = Lines()) -> InboundAdmission {
        InboundAdmission(maxTotal: total, maxPerAddress: perAddress, trusting: [trusted], logger: lines.logger)
    }

    /// The channel `admission` evicted for `channel`, admitted from `address` at `now`; nil if
    /// none, and a failed expectation if it was refused.
    static func admit(
        _ admission: InboundAdmission, _ channel: any Channel, from address: String,
        at now: ContinuousClock.Instant
    ) -> (any Channel)? {
        guard case .admitted(let evicting) = admission.admit(channel, from: address, at: now) else {
            Issue.record("refused a connection from \(address)")
            return nil
        }
        return evicting
    }

    let start = ContinuousClock.now
    /// `ms` milliseconds after the test's start.
    func at(_ ms: Int) -> ContinuousClock.Instant { start + .milliseconds(ms) }

    @Test func atTheLimitANewConnectionTakesThePlaceOfTheOldest() {
        let admission = Self.admission(total: 3)
        let held = (0..<3).map { _ in EmbeddedChannel() }
        for (i, c) in held.enumerated() { #expect(Self.admit(admission, c, from: "10.0.0.\(i)", at: at(i)) == nil) }
        let newer = EmbeddedChannel()
        #expect(Self.admit(admission, newer, from: "10.0.0.9", at: at(1_000)) === held[0])
        #expect(Self.admit(admission, EmbeddedChannel(), from: "10.0.0.8", at: at(1_001)) === held[1])
        // An evicted connection's close gives back nothing: its place is taken already.
        admission.release(held[0])
        #expect(admission.evicted == 2 && admission.refused == 0)
        #expect(admission.open[.silent] == 3)
    }

    @Test func anAddressThatEvictsItsOwnConnectionsKeepsItsCountRight() {
        let admission = Self.admission(total: 2, perAddress: 3)
        let first = EmbeddedChannel(), second = EmbeddedChannel(), third = EmbeddedChannel()
        _ = Self.admit(admission, first, from: "10.0.0.1", at: at(0))
        _ = Self.admit(admission, second, from: "10.0.0.1", at: at(1))
        #expect(Self.admit(admission, third, from: "10.0.0.1", at: at(1_000)) === first)
        // Two open from the address, not three: the next one is admitted, not refused for the address's limit.
        #expect(Self.admit(admission, EmbeddedChannel(), from: "10.0.0.1", at: at(2_000)) === second)
        #expect(admission.refused == 0 && admission.evicted == 2)
        admission.release(first)
        admission.release(third)
        #expect(admission.open[.silent] == 1)
    }

    @Test func connectionsSilentPastTheGraceGoFirstThenTheMostCrowdedAddress() {
        let admission = Self.admission(total: 4)
        let speaking = EmbeddedChannel(), silent = EmbeddedChannel(), crowdA = EmbeddedChannel(),
            crowdB = EmbeddedChannel()
        _ = Self.admit(admission, speaking, from: "10.0.0.1", at: at(0))
        admission.heard(speaking)
        _ = Self.admit(admission, crowdA, from: "10.0.0.2", at: at(1))
        admission.heard(crowdA)
        _ = Self.admit(admission, crowdB, from: "10.0.0.2", at: at(2))
        admission.heard(crowdB)
        _ = Self.admit(admission, silent, from: "10.0.0.3", at: at(3))
        // Silent for less than the grace: the most crowded address goes first, its oldest.
        #expect(Self.admit(admission, EmbeddedChannel(), from: "10.0.0.4", at: at(100)) === crowdA)
        // Silent past the grace: it goes before the oldest that has begun its handshake.
        #expect(Self.admit(admission, EmbeddedChannel(), from: "10.0.0.5", at: at(1_000)) === silent)
    }

    @Test func fromAddressesAlikeASilentConnectionGoesBeforeAnOlderOneWhoseHandshakeHasBegun() {
        let admission = Self.admission(total: 2)
        let honest = EmbeddedChannel(), stranger = EmbeddedChannel()
        _ = Self.admit(admission, honest, from: "10.0.0.1", at: at(0))
        admission.heard(honest)
        _ = Self.admit(admission, stranger, from: "10.0.0.2", at: at(1))
        #expect(Self.admit(admission, EmbeddedChannel(), from: "10.0.0.3", at: at(50)) === stranger)
    }

    @Test func aTrustedDevicesPlaceIsNeverTakenAndWhenAllAreTrustedNewOnesAreRefused() {
        let lines = Lines()
        let admission = Self.admission(total: 2, lines: lines)
        let honest = EmbeddedChannel(), stranger = EmbeddedChannel(), other = EmbeddedChannel()
        _ = Self.admit(admission, honest, from: "10.0.0.1", at: at(0))
        _ = Self.admit(admission, stranger, from: "10.0.0.2", at: at(1))
        admission.heard(honest)
        admission.heard(stranger)
        admission.shown(Self.trusted, by: honest)
        // A device that is not trusted keeps nothing by showing itself.
        admission.shown(Self.stranger, by: stranger)
        #expect(Self.admit(admission, other, from: "10.0.0.3", at: at(2_000)) === stranger)
        // Trusted later: its next connection keeps its place.
        admission.trust([Self.trusted, Self.stranger])
        admission.shown(Self.stranger, by: other)
        guard case .refused(let reason) = admission.admit(EmbeddedChannel(), from: "10.0.0.4", at: at(3_000)) else {
            Issue.record("a place held by a trusted device was taken")
            return
        }
        #expect(reason.contains("NetworkConfiguration.maxInboundConnections = 2"))
        #expect(admission.refused == 1 && admission.evicted == 1 && admission.open[.trusted] == 2)
        let warnings = lines.all.filter { $0.0 == .warning }.map(\.1)
        #expect(warnings.count == 2, "one line when eviction starts, one when refusing starts: \(warnings)")
    }

    @Test func anAddressAtItsLimitIsRefusedAndLoggedOnce() {
        let lines = Lines()
        let admission = Self.admission(total: 10, perAddress: 2, lines: lines)
        let first = EmbeddedChannel()
        _ = Self.admit(admission, first, from: "10.0.0.1", at: at(0))
        _ = Self.admit(admission, EmbeddedChannel(), from: "10.0.0.1", at: at(1))
        for i in 0..<5 {
            guard case .refused(let reason) = admission.admit(EmbeddedChannel(), from: "10.0.0.1", at: at(2 + i)) else {
                Issue.record("a third connection from one address was admitted")
                return
            }
            #expect(reason.contains("NetworkConfiguration.maxConnectionsPerAddress = 2"))
        }
        #expect(admission.refused == 5 && admission.evicted == 0)
        #expect(lines.all.filter { $0.0 == .notice }.count == 1, "logged once: \(lines.all)")
        // A place freed is a place to take; at the limit again, logged again.
        admission.release(first)
        #expect(Self.admit(admission, EmbeddedChannel(), from: "10.0.0.1", at: at(10)) == nil)
        _ = admission.admit(EmbeddedChannel(), from: "10.0.0.1", at: at(11))
        #expect(lines.all.filter { $0.0 == .notice }.count == 2)
    }

    @Test func aFloodAtTheLimitIsLoggedOnceAndTheEndOfItOnce() {
        let lines = Lines()
        let admission = Self.admission(total: 8, lines: lines)
        var open = [EmbeddedChannel]()
        for i in 0..<200 {
            let c = EmbeddedChannel()
            if let evicted = Self.admit(admission, c, from: "10.0.\(i % 64).1", at: at(i)) {
                open.removeAll { $0 === evicted }
            }
            open.append(c)
        }
        #expect(admission.evicted == 192 && open.count == 8)
        for c in open { admission.release(c) }
        let logged = lines.all.map(\.0)
        #expect(logged == [.warning, .notice], "\(lines.all)")
    }
}
