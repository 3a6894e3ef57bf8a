// RecordCommitGateTests: synced batch writes give way to record commits under way in the process
// (Spec/assets.md §3.3) — each piece and each sync waits for them, never longer than its bound,
// so a commit that never ends slows the lane and cannot stop it.

import Testing
@testable import ShoalAssets
import ShoalWire
import ShoalSamples
import CShoalThread
import Dispatch
import Foundation
import Synchronization

@Suite struct RecordCommitGateTests {
    /// A waiter returns once the commit it waited for ends, not before. The commit is held and
    /// ended from a thread of its own: other tests' waits may block the cooperative pool's
    /// threads for their bounds, and a sleep there could outlast this waiter's.
    @Test func aWaitEndsWhenTheCommitEnds() async throws {
        let (early, late) = await withCheckedContinuation { (c: CheckedContinuation<(Int, Int), Never>) in
            Thread.detachNewThread {
                shoal_record_commit_begin()
                let returned = Atomic<Int>(-1)
                let done = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    returned.store(Int(shoal_wait_for_record_commits(60_000_000)), ordering: .releasing)
                    done.signal()
                }
                Thread.sleep(forTimeInterval: 0.1)
                let early = returned.load(ordering: .acquiring)
                shoal_record_commit_end()
                // Other tests' commits may hold it a little longer; the 60 s bound is far off.
                _ = done.wait(timeout: .now() + 30)
                c.resume(returning: (early, returned.load(ordering: .acquiring)))
            }
        }
        #expect(early == -1, "no return while the commit is under way")
        #expect(late == 1, "the waiter waited and then went on")
    }

    /// A wait never outlasts its bound, however long the commit.
    @Test func aWaitIsBounded() {
        shoal_record_commit_begin()
        defer { shoal_record_commit_end() }
        let start = ContinuousClock.now
        #expect(shoal_wait_for_record_commits(50_000) == 1)
        #expect(ContinuousClock.now - start >= .milliseconds(50), "it waited for the commit until the bound")
    }

    /// A synced batch written in pieces while a commit stays open still completes, each piece and
    /// each sync (between pieces, and the final one) having waited its bound, and its records
    /// read back.
    @Test func aBatchFinishesWhileACommitStaysOpen() throws {
        let dir = TempDirectory()
        let segments = try SegmentStore(folder: dir.path + "/segments", sync: true, maximumChunkBytes: 1 << 16)
        let batch = RecordBatch(capacity: 100_000)
        var expected: [ContentHash: [UInt8]] = [:]
        for i in 0..<4 {
            let bytes = randomBytes(5_000 + i, seed: UInt64(70 + i)), hash = ContentHash.sha256(bytes)
            #expect(bytes.withUnsafeBytes { batch.append(hash, tag: ChunkStore.rawTag, stored: $0, length: $0.count) })
            expected[hash] = bytes
        }
        let placement = try segments.reserve(batch)
        let pieces = (batch.alignedBytes().count + 4095) / 4096
        #expect(pieces >= 4)
        let bound = SegmentStore.recordCommitWaitMicroseconds
        shoal_record_commit_begin()
        let start = ContinuousClock.now
        try segments.write(batch, at: placement, syncEvery: 4096)
        let written = ContinuousClock.now
        try segments.commit(placement.records)
        let committed = ContinuousClock.now
        shoal_record_commit_end()
        #expect(
            written - start >= .microseconds((2 * pieces - 1) * bound),
            "each of \(pieces) pieces and the \(pieces - 1) syncs between them gave way for its bound")
        #expect(committed - written >= .microseconds(bound), "the final sync gave way for its bound")
        var buffer: [UInt8] = []
        for (hash, bytes) in expected {
            let l = try #require(segments.location(of: hash))
            #expect(try segments.read(hash, at: l, into: &buffer))
            #expect(Array(buffer[SegmentStore.headerBytes...]) == bytes)
        }
    }
}
