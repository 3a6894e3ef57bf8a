// TwoLanesTests: the asset lane's background threads — results in order, no deadlock when the
// callers are themselves lane threads, and (on Linux) the lowered CPU policy in effect.

import Testing
@testable import ShoalAssets
import Synchronization
import Foundation
#if canImport(Glibc)
import Glibc
#endif

@Suite struct TwoLanesTests {
    @Test func resultsComeBackInIndexOrderFromBothLanes() {
        for count in [0, 1, 2, 3, 17, 256] {
            // Recorded, then checked here: lane 1 runs on a thread outside the test's task.
            let lanes = Mutex<[Int: Int]>([:])
            let out = inTwoLanes(count) { i, lane in
                lanes.withLock { $0[i] = lane }
                return i &* 31
            }
            #expect(out == (0..<count).map { $0 &* 31 }, "count \(count)")
            #expect(lanes.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0..<count).map { ($0, $0 % 2) }), "count \(count)")
        }
    }

    /// Eight tasks on the lane's executor (two threads) each run two-lane batches: every caller
    /// that finds no free thread runs its other lane itself, so all finish.
    @Test func callersOnTheLaneThreadsDoNotWaitForEachOther() async {
        let executor = AssetLaneExecutor()
        let sums = await withTaskGroup(of: Int.self, returning: [Int].self) { group in
            for task in 0..<8 {
                group.addTask(executorPreference: executor) {
                    var total = 0
                    for round in 0..<20 {
                        let parts = inTwoLanes(6) { i, _ -> Int in
                            usleep(100)  // long enough that the other callers queue
                            return task * 1000 + round * 10 + i
                        }
                        total += parts.reduce(0, +)
                    }
                    return total
                }
            }
            var all: [Int] = []
            for await s in group { all.append(s) }
            return all.sorted()
        }
        // Per task: Σ over 20 rounds of 6·(1000·task + 10·round) + (0+…+5).
        let expected = (0..<8).map { task in (0..<20).reduce(0) { $0 + 6 * (task * 1000 + $1 * 10) + 15 } }
        #expect(sums == expected)
    }

    #if os(Linux)
    /// Work on the lane's executor runs on a thread named `shoal-assets`, with SCHED_IDLE: the policy the issue's latency target
    /// relies on (records get a core first). The pool records what it achieved; containers may
    /// refuse, in which case the policy must be the normal one, never something else.
    @Test func laneThreadsRunAtIdlePriority() async {
        let executor = AssetLaneExecutor()
        let (policy, name) = await withTaskExecutorPreference(executor) { () async -> (Int32, String?) in
            (sched_getscheduler(0), try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))
        }
        #expect(name == "shoal-assets\n", "lane threads are named for top -H and perf; got \(name ?? "nothing")")
        let lowered = BackgroundThreads.shared.lowered.load(ordering: .relaxed)
        #expect(lowered >= 0, "no lane thread has started")
        if lowered & 1 != 0 {
            #expect(policy == 5, "SCHED_IDLE is 5; got \(policy)")
        } else {
            #expect(policy == 0, "the policy was not lowered, so it must be SCHED_OTHER; got \(policy)")
        }
        // And the caller's own thread is untouched.
        #expect(sched_getscheduler(0) != 5)
    }
    #endif
}
