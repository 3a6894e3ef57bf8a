// OutboundSubscriptionTests: how a subscription this node serves moves when a batch goes, without the actor.

import Testing
@testable import ShoalSync
import ShoalWire

@Suite struct OutboundSubscriptionTests {
    static let zone = RecordZone.ID(name: "notes")
    static let incarnation = NodeID(high: 1, low: 1)
    static let a = NodeID(high: 2, low: 2)
    static let b = NodeID(high: 3, low: 3)

    static func token(_ v: VersionVector) -> ChangeToken {
        ChangeToken(.init(kind: .zone, incarnation: incarnation, vector: v))
    }

    static func vector(_ entries: [(NodeID, UInt64)]) -> VersionVector {
        var v = VersionVector()
        for (n, t) in entries { v.advance(n, to: HLC(rawValue: t)) }
        return v
    }

    static func batch(_ n: UInt64, caughtUp: Bool, reset: Bool = false, at v: VersionVector) -> ChangesMessage {
        ChangesMessage(
            zone: zone, incarnation: incarnation, batch: n, isCaughtUp: caughtUp, isReset: reset, token: token(v),
            records: [])
    }

    /// A batch in the middle of a catch-up moves the position and the batch number and keeps
    /// the pass going; the caught-up batch ends the reset pass and the reading, unless
    /// a commit arrived while it was read.
    @Test func aBatchMovesThePositionAndTheCaughtUpOneEndsThePass() {
        var sub = SyncSession.Outbound(incarnation: Self.incarnation, peerKnowledge: VersionVector(), window: 4)
        sub.beginResetPass()
        let middle = Self.vector([(Self.a, 10)])
        let first = Self.batch(1, caughtUp: false, reset: true, at: middle)
        sub.noteSent(first, records: 3, stated: nil)
        #expect(sub.token == first.token && sub.tokenSent == first.token.bytes)
        #expect(sub.nextBatch == 2 && sub.lastRecordsBatch == 1 && sub.sentAny)
        #expect(
            sub.resetPass == .running && sub.reading == .due && sub.lastSent == .batch,
            "the pass goes on until a caught-up batch")

        let end = Self.vector([(Self.a, 20), (Self.b, 5)])
        let stated = Self.vector([(Self.b, 5)])
        sub.reading = .reading(again: true)
        sub.noteSent(Self.batch(2, caughtUp: true, at: end), records: 0, stated: stated)
        #expect(sub.nextBatch == 3 && sub.lastRecordsBatch == 1, "a batch without records starts no burst")
        #expect(sub.lastSent == .caughtUp && sub.resetPass == .none)
        #expect(sub.reading == .reading(again: true), "a commit arrived while the batch was read: read again")
        #expect(sub.vectorReference == stated, "live vectors are written against what the subscription stated")

        sub.reading = .reading(again: false)
        sub.noteSent(
            Self.batch(3, caughtUp: true, reset: true, at: end), records: 1, stated: Self.vector([(Self.a, 20)]))
        #expect(sub.reading == .caughtUp)
        #expect(
            sub.vectorReference == Self.vector([(Self.a, 20)]),
            "a reset batch starts the reference again from what it states")
    }

    /// Live batching (Spec/replication.md §4): how a commit to the zone moves the subscription,
    /// in each state it can find it in.
    @Test func aCommitReadsAtOnceJoinsWaitingNewsOrMarksTheBatchBeingRead() {
        let now = ContinuousClock.now
        var sub = SyncSession.Outbound(incarnation: Self.incarnation, peerKnowledge: VersionVector(), window: 4)
        // Not caught up yet: the pump is due anyway, a commit adds nothing.
        #expect(sub.noteCommit(at: now, batchRecords: 100) == .wait)
        #expect(sub.heldNews == nil && sub.reading == .due)

        // Caught up, nothing unacknowledged: read at once.
        sub.reading = .caughtUp
        #expect(sub.noteCommit(at: now, batchRecords: 100) == .read)
        #expect(sub.reading == .due && sub.heldNews == nil)

        // Caught up while a batch with records is unacknowledged: a burst, the news waits.
        sub.reading = .caughtUp
        sub.nextBatch = 3
        sub.lastRecordsBatch = 2
        sub.acknowledged = 1
        #expect(sub.noteCommit(at: now, batchRecords: 3) == .wait)
        #expect(sub.heldNews?.since == now && sub.heldNews?.commits == 1 && sub.reading == .due)
        // Later commits join it, and a batch's worth of commits goes at once.
        #expect(sub.noteCommit(at: now + .milliseconds(5), batchRecords: 3) == .wait)
        #expect(sub.heldNews?.since == now && sub.heldNews?.commits == 2)
        #expect(sub.noteCommit(at: now + .milliseconds(9), batchRecords: 3) == .read)
        #expect(sub.heldNews == nil)

        // Batching off (no clock) or batches of one record: no burst is held.
        sub.reading = .caughtUp
        #expect(sub.noteCommit(at: nil, batchRecords: 3) == .read)
        sub.reading = .caughtUp
        #expect(sub.noteCommit(at: now, batchRecords: 1) == .read)

        // A batch being read: it reads again before going idle, whatever else holds.
        sub.reading = .reading(again: false)
        #expect(sub.noteCommit(at: now, batchRecords: 3) == .wait)
        #expect(sub.reading == .reading(again: true) && sub.heldNews == nil)
    }

    /// A pump's reading (Spec/replication.md §4): it starts only on a subscription that is due
    /// and has room in its window, a caught-up batch ends it unless a commit came meanwhile, and
    /// a pump that stops for another reason leaves the subscription due.
    @Test func aPumpReadsOnlyADueSubscriptionWithRoomAndLeavesItDueOrCaughtUp() {
        var sub = SyncSession.Outbound(incarnation: Self.incarnation, peerKnowledge: VersionVector(), window: 1)
        var began = sub.beginReading()
        #expect(began && sub.reading == .reading(again: false))
        began = sub.beginReading()
        #expect(!began, "one pump at a time")
        sub.noteSent(Self.batch(1, caughtUp: false, at: Self.vector([(Self.a, 1)])), records: 1, stated: nil)
        sub.endReading()
        #expect(sub.reading == .due, "the window is full: due once it opens")
        began = sub.beginReading()
        #expect(!began, "no room in the window")
        #expect(sub.reading == .due)

        sub.noteAcknowledged(1, knowledge: VersionVector())
        began = sub.beginReading()
        #expect(began)
        sub.noteSent(Self.batch(2, caughtUp: true, at: Self.vector([(Self.a, 2)])), records: 0, stated: nil)
        sub.endReading()
        began = sub.beginReading()
        #expect(sub.reading == .caughtUp && !began, "caught up: nothing to read")
        sub.markDue()
        #expect(sub.reading == .due, "records asked for whole or a lost upstream read it again")
        sub.noteAcknowledged(2, knowledge: VersionVector())
        began = sub.beginReading()
        #expect(began)
        sub.markDue()
        #expect(sub.reading == .reading(again: false), "a reading under way is left as it is")
        var again = sub.readAgainIfReading()
        #expect(again && sub.reading == .reading(again: true), "a second pump makes the one under way read again")
        sub.noteCaughtUp()
        #expect(sub.reading == .reading(again: true), "the reading goes on after a caught-up batch")
        sub.reading = .reading(again: false)
        sub.noteCaughtUp()
        #expect(sub.reading == .caughtUp)
        again = sub.readAgainIfReading()
        #expect(!again && sub.reading == .caughtUp, "nothing being read: nothing to read again")
    }

    /// An acknowledgement names a batch in flight, or the last acknowledged again; it moves the
    /// window and adds what the subscriber stated to what it is known to hold.
    @Test func anAcknowledgementMovesTheWindowAndWhatThePeerHolds() {
        var sub = SyncSession.Outbound(incarnation: Self.incarnation, peerKnowledge: VersionVector(), window: 4)
        #expect(!sub.mayAcknowledge(1), "nothing sent yet")
        sub.nextBatch = 4
        #expect(sub.mayAcknowledge(0) && sub.mayAcknowledge(3) && !sub.mayAcknowledge(4))
        #expect(sub.unacknowledged == 3)
        sub.noteAcknowledged(2, knowledge: Self.vector([(Self.a, 10)]))
        sub.noteAcknowledged(2, knowledge: Self.vector([(Self.b, 4)]))
        #expect(sub.acknowledged == 2 && sub.unacknowledged == 1)
        #expect(sub.peerKnowledge == Self.vector([(Self.a, 10), (Self.b, 4)]))
        #expect(!sub.mayAcknowledge(1), "an acknowledgement never goes back")
    }

    /// What a batch received claims (the subscriber side): the union of what the subscription's
    /// batches stated, started over by a reset batch, with the `live-changes` reference moving
    /// the same way.
    @Test func aReceivedBatchClaimsTheUnionOfWhatItsSubscriptionStated() {
        var sub = SyncSession.Inbound(incarnation: Self.incarnation)
        sub.statedKnowledge = Self.vector([(Self.b, 1)])
        let first = Self.vector([(Self.a, 10)]), second = Self.vector([(Self.b, 5)])
        var m = Self.batch(1, caughtUp: false, at: first)
        m.knowledge = first
        #expect(sub.noteStated(by: m) == first)
        m = Self.batch(2, caughtUp: true, at: first)
        m.knowledge = second
        #expect(sub.noteStated(by: m) == Self.vector([(Self.a, 10), (Self.b, 5)]))
        #expect(sub.vectorReference == Self.vector([(Self.a, 10), (Self.b, 5)]))
        m = Self.batch(3, caughtUp: false, at: first)
        m.knowledge = nil
        #expect(sub.noteStated(by: m) == nil, "a batch stating nothing claims nothing")
        m = Self.batch(4, caughtUp: false, reset: true, at: first)
        m.knowledge = second
        #expect(sub.noteStated(by: m) == second, "a reset pass starts over")
        #expect(sub.statedKnowledge.isEmpty && sub.vectorReference == second)
    }

    /// The writes left out for the upstreams widen, per node, to the lowest and highest of them.
    @Test func skippedWritesWidenPerNode() {
        var sub = SyncSession.Outbound(incarnation: Self.incarnation, peerKnowledge: VersionVector(), window: 4)
        sub.noteSkipped([Self.a: (HLC(rawValue: 10), HLC(rawValue: 20))])
        sub.noteSkipped([Self.a: (HLC(rawValue: 5), HLC(rawValue: 15)), Self.b: (HLC(rawValue: 7), HLC(rawValue: 7))])
        #expect(sub.skipped[Self.a]?.low == HLC(rawValue: 5) && sub.skipped[Self.a]?.high == HLC(rawValue: 20))
        #expect(sub.skipped[Self.b]?.low == HLC(rawValue: 7) && sub.skipped[Self.b]?.high == HLC(rawValue: 7))
    }
}
