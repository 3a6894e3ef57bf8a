// TwoLanesTests: the asset lane's threads — results in order, no deadlock when the callers are
// themselves lane threads, giving way between items, and (on Linux) named and at normal priority.

import Testing
@testable import ShoalAssets
import ShoalLanes
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
            #expect(
                lanes.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0..<count).map { ($0, $0 % 2) }),
                "count \(count)")
        }
    }

    /// Eight tasks on the lane's executor (two threads) each run two-lane batches: every caller
    /// that finds no free thread runs its other lane itself, so all finish.
    @Test func callersOnTheLaneThreadsDoNotWaitForEachOther() async {
        let executor = LaneExecutor()
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

    /// A two-lane batch run by the lane's threads gives way after every item, so a thread woken
    /// for record work waits behind one chunk's work at most, not a time slice of many
    /// (``BackgroundThreads/giveWay()``). Other tests may give way meanwhile: the count is a floor.
    @Test func laneThreadsGiveWayAfterEveryItem() async {
        let items = 64
        let before = BackgroundThreads.givenWay.load(ordering: .relaxed)
        let executor = LaneExecutor()
        let out = await withTaskExecutorPreference(executor) { () async -> [Int] in
            inTwoLanes(items) { i, _ in i }
        }
        #expect(out == Array(0..<items))
        let given = BackgroundThreads.givenWay.load(ordering: .relaxed) - before
        #expect(given >= items, "the lane threads gave way \(given) times over \(items) items")
    }

    #if os(Linux)
        /// Work on the lane's executor runs on a thread named `shoal-assets`, at the caller's CPU
        /// policy and nice value: a lowered lane starved transfers whenever other programs kept the
        /// cores busy (Spec/assets.md §5.1), so it must not come back unnoticed.
        @Test func laneThreadsAreNamedAndNotLowered() async {
            let executor = LaneExecutor()
            let (policy, nice, name) = await withTaskExecutorPreference(executor) {
                () async -> (Int32, Int32, String?) in
                (
                    sched_getscheduler(0), getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0),
                    try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
                )
            }
            #expect(name == "shoal-assets\n", "lane threads are named for top -H and perf; got \(name ?? "nothing")")
            #expect(policy == sched_getscheduler(0), "the lane's policy \(policy) differs from the caller's")
            #expect(nice == getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), "the lane runs at nice \(nice)")
        }
    #endif
}
