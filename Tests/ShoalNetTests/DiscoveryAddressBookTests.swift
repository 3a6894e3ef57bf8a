// DiscoveryAddressBookTests: which discovered addresses a node keeps, tries and drops, and the rate limits on what an announcement makes it do.

import Foundation
import Testing
import ShoalWire
@testable import ShoalNet

/// The pure policy of Spec/discovery.md §4.1 (`DiscoveryAddressBook`), with time passed in.
@Suite struct DiscoveryAddressBookTests {
    static let t0 = Date(timeIntervalSince1970: 10_000)
    /// The policy of an interval of 10 s: a probe every 5 s at most, a failed candidate retried
    /// after 5 s, four candidate dials per device and four replies per interval.
    static func book() -> DiscoveryAddressBook {
        var c = DiscoveryConfiguration()
        c.interval = .seconds(10)
        return DiscoveryAddressBook(policy: .init(c))
    }

    static func device(_ byte: UInt8) -> DeviceID { DeviceID(bytes: [UInt8](repeating: byte, count: 32))! }
    static func address(_ last: Int, port: Int = 7400) -> PeerAddress {
        PeerAddress(host: "10.77.0.\(last)", port: port)
    }

    @Test func aCandidateGetsOneDialAndAFailureDropsItUntilItsRetryTime() {
        var book = Self.book()
        let d = Self.device(1), spoofed = Self.address(3)
        let action = book.heard(d, at: [spoofed], connected: false, changed: true, now: Self.t0)
        #expect(action == .none, "not connected: nothing to probe")
        let dialled = book.toDial(d, from: [spoofed], now: Self.t0)
        #expect(dialled == [spoofed], "a new candidate is tried")
        let stopped = book.dialFailed(d, at: spoofed, .notTheDevice, announced: true, now: Self.t0)
        #expect(stopped, "its first failure stops it")
        #expect(book.addresses(of: d)[spoofed]?.standing == .candidate)
        _ = book.heard(d, at: [spoofed], connected: false, changed: true, now: Self.t0.addingTimeInterval(1))
        let tooSoon = book.toDial(d, from: [spoofed], now: Self.t0.addingTimeInterval(4.9))
        #expect(tooSoon.isEmpty, "heard again within the retry time: not dialled")
        let later = book.toDial(d, from: [spoofed], now: Self.t0.addingTimeInterval(5))
        #expect(later == [spoofed], "after it: tried once more")
        let stoppedAgain = book.dialFailed(
            d, at: spoofed, .unreachable, announced: true, now: Self.t0.addingTimeInterval(5))
        #expect(stoppedAgain, "a candidate unreachable is dropped too")
    }

    @Test func aVerifiedAddressIsDroppedOnlyWhenMutualTLSThereFails() {
        var book = Self.book()
        let d = Self.device(1), real = Self.address(1)
        _ = book.heard(d, at: [real], connected: false, changed: true, now: Self.t0)
        let dialled = book.toDial(d, from: [real], now: Self.t0)
        #expect(dialled == [real])
        book.verified(d, at: real, now: Self.t0)
        #expect(book.addresses(of: d)[real]?.standing == .verified)
        // Announced elsewhere a hundred times: still verified, still dialled whenever asked.
        for i in 0..<100 {
            _ = book.heard(d, at: [Self.address(3, port: 7400 + i)], connected: true, changed: true, now: Self.t0)
        }
        #expect(book.addresses(of: d)[real]?.standing == .verified)
        let redialled = book.toDial(d, from: [real], now: Self.t0)
        #expect(redialled == [real], "a verified address is not rate-limited")
        // Unreachable while still announced (its node restarts, a cable is out): kept, the dialer backs off.
        let stoppedWhileAnnounced = book.dialFailed(d, at: real, .unreachable, announced: true, now: Self.t0)
        #expect(!stoppedWhileAnnounced)
        #expect(book.addresses(of: d)[real]?.standing == .verified)
        // Unreachable and no longer announced: the device moved away from it.
        let stoppedWhenGone = book.dialFailed(d, at: real, .unreachable, announced: false, now: Self.t0)
        #expect(stoppedWhenGone)
        book.verified(d, at: real, now: Self.t0)
        // TLS there shows another device, or is refused: dropped, whatever is announced.
        let stoppedAtTLS = book.dialFailed(d, at: real, .notTheDevice, announced: true, now: Self.t0)
        #expect(stoppedAtTLS)
        #expect(book.addresses(of: d)[real]?.standing == .candidate)
    }

    @Test func candidateDialsAreLimitedPerDeviceAndInterval() {
        var book = Self.book()
        let d = Self.device(1), other = Self.device(2)
        let many = (10..<20).map { Self.address($0) }
        _ = book.heard(d, at: Set(many), connected: false, changed: true, now: Self.t0)
        let first = book.toDial(d, from: many, now: Self.t0)
        #expect(first == Array(many.prefix(4)), "four candidate dials per interval")
        let withinInterval = book.toDial(d, from: many, now: Self.t0.addingTimeInterval(9.9))
        #expect(withinInterval.isEmpty)
        let otherDevice = book.toDial(other, from: [Self.address(30)], now: Self.t0)
        #expect(otherDevice == [Self.address(30)], "each device has its own budget")
        let nextInterval = book.toDial(d, from: Array(many.dropFirst(4)), now: Self.t0.addingTimeInterval(10.1))
        #expect(nextInterval.count == 4, "the next interval: four more")
    }

    @Test func aConnectedDeviceHeardElsewhereIsProbedAtMostOncePerSpacing() {
        var book = Self.book()
        let d = Self.device(1)
        let unchanged = book.heard(d, at: [Self.address(1)], connected: true, changed: false, now: Self.t0)
        #expect(unchanged == .none, "the same addresses: nothing")
        let changed = book.heard(d, at: [Self.address(3)], connected: true, changed: true, now: Self.t0)
        #expect(changed == .probe(after: .zero), "other addresses: probe now")
        let meanwhile = book.heard(
            d, at: [Self.address(1)], connected: true, changed: true, now: Self.t0.addingTimeInterval(0.1))
        #expect(
            meanwhile == .none,
            "one probe planned covers what is heard meanwhile")
        book.probed(d)
        // Asked again 1 s later: planned for when the 5 s spacing ends.
        guard
            case .probe(let after) = book.heard(
                d, at: [Self.address(3)], connected: true, changed: true, now: Self.t0.addingTimeInterval(1))
        else {
            Issue.record("no probe planned")
            return
        }
        #expect(abs(after.inSeconds - 4) < 0.001)
        book.probed(d)
        // A spoofer answering every announcement, once a second for a minute: a probe every 5 s
        // (each runs at its planned time), not sixty.
        var probes = 0
        var due: Double?
        for s in 2..<62 {
            if let t = due, Double(s) >= t {
                book.probed(d)
                due = nil
            }
            if case .probe(let after) = book.heard(
                d, at: [Self.address(s % 2 == 0 ? 3 : 1)], connected: true, changed: true,
                now: Self.t0.addingTimeInterval(Double(s)))
            {
                probes += 1
                due = Double(s) + after.inSeconds
            }
        }
        #expect(probes <= 60 / 5, "\(probes) probes in a minute")
    }

    @Test func repliesAreLimitedPerDeviceAndInAll() {
        var book = Self.book()
        let d = Self.device(1)
        let first = book.mayReply(to: d, now: Self.t0)
        #expect(first)
        let again = book.mayReply(to: d, now: Self.t0.addingTimeInterval(1))
        #expect(!again, "once per device per interval")
        let nextInterval = book.mayReply(to: d, now: Self.t0.addingTimeInterval(10.1))
        #expect(nextInterval, "the next interval")
        // A flood of forged device IDs: four replies per interval in all.
        let replied = (10..<200).filter {
            book.mayReply(to: Self.device(UInt8($0)), now: Self.t0.addingTimeInterval(11))
        }.count
        #expect(replied == 3, "with the one above, four in the interval")
        // A spoofer with a new instance each second, for a minute, one device: six replies.
        var b = Self.book()
        let count = (0..<60).filter { b.mayReply(to: d, now: Self.t0.addingTimeInterval(Double($0))) }.count
        #expect(count == 6)
    }

    @Test func aNewInstanceRestartsDialersAtMostOncePerIntervalAndClearsFailures() {
        var book = Self.book()
        let d = Self.device(1), a = Self.address(1)
        _ = book.heard(d, at: [a], connected: false, changed: true, now: Self.t0)
        _ = book.toDial(d, from: [a], now: Self.t0)
        _ = book.dialFailed(d, at: a, .unreachable, announced: true, now: Self.t0)
        let tooSoon = book.toDial(d, from: [a], now: Self.t0.addingTimeInterval(1))
        #expect(tooSoon.isEmpty)
        let restarts = book.mayRestartDialers(d, now: Self.t0.addingTimeInterval(1))
        #expect(restarts)
        let dialled = book.toDial(d, from: [a], now: Self.t0.addingTimeInterval(1))
        #expect(dialled == [a], "its node restarted: tried at once")
        let restartsAgain = book.mayRestartDialers(d, now: Self.t0.addingTimeInterval(2))
        #expect(!restartsAgain, "not again within the interval")
        let nextInterval = book.mayRestartDialers(d, now: Self.t0.addingTimeInterval(11))
        #expect(nextInterval)
    }

    @Test func theBookIsBoundedAndKeepsVerifiedAddresses() {
        var book = Self.book()
        let d = Self.device(1), real = Self.address(1)
        book.verified(d, at: real, now: Self.t0)
        for i in 0..<100 {
            _ = book.heard(
                d, at: [Self.address(3, port: 1_000 + i)], connected: true, changed: true,
                now: Self.t0.addingTimeInterval(Double(i)))
        }
        let kept = book.addresses(of: d)
        #expect(kept.count == 32)
        #expect(kept[real]?.standing == .verified, "forged addresses never push out a verified one")
        #expect(
            kept[Self.address(3, port: 1_099)] != nil && kept[Self.address(3, port: 1_000)] == nil,
            "the candidates heard last stay")
        #expect(book.device(at: real) == d)
        book.forget(d)
        #expect(book.device(at: real) == nil)
    }
}
