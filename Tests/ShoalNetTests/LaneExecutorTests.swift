// LaneExecutorTests: tasks that prefer the lane executor, and the default actors they call, run on
// the lane threads and not on the cooperative pool.

import Testing
import ShoalLanes
import ShoalSamples

@Suite struct LaneExecutorTests {
    /// A default actor: where its methods run depends on the caller's executor preference.
    actor Probe {
        var calls = 0
        func onLane() -> Bool {
            calls += 1
            return LaneExecutor.isCurrent
        }
    }

    @Test func laneTasksAndTheActorsTheyCallRunOnTheLaneThreads() async {
        let lanes = LaneExecutor()
        let probe = Probe()
        let (inTask, inActor, afterActor) = await Task(executorPreference: lanes) {
            (LaneExecutor.isCurrent, await probe.onLane(), LaneExecutor.isCurrent)
        }.value
        #expect(inTask, "the task's own code runs on the lane threads")
        #expect(inActor, "so does the actor it calls (SE-0417)")
        #expect(afterActor, "and it comes back to the lane threads after the call")
        // Without the preference, neither the task nor the actor runs there.
        let outside = await Task { (LaneExecutor.isCurrent, await probe.onLane()) }.value
        #expect(outside == (false, false))
        #expect(await probe.calls == 2)
    }

    @Test func everyJobOfAManyStepTaskRunsOnTheLaneThreads() async {
        let lanes = LaneExecutor()
        let everyStep = await Task(executorPreference: lanes) { () async -> Bool in
            var all = true
            for _ in 0..<50 {
                await Task.yield()
                all = all && LaneExecutor.isCurrent
            }
            return all
        }.value
        #expect(everyStep)
    }
}

@Suite struct JobQueueTests {
    /// Jobs come out in the order they went in, however pushes and pops interleave, and each job
    /// taken is released at once. Seeded: the seed is printed on failure.
    @Test(arguments: [UInt64(1), 2, 3])
    func jobsComeOutInOrderAndGoWhenTaken(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var queue = JobQueue()
        let ran = Ran()
        var pushed = 0, popped = 0
        for _ in 0..<5_000 {
            if rng.next() % 3 != 0 || queue.count == 0 {
                let n = pushed
                queue.push { ran.append(n) }
                pushed += 1
            } else {
                queue.pop()?()
                popped += 1
            }
            #expect(queue.count == pushed - popped, "seed \(seed)")
        }
        while let job = queue.pop() { job() }
        #expect(queue.pop() == nil && queue.count == 0)
        #expect(ran.values == Array(0..<pushed), "seed \(seed)")
    }

    /// A job's captures are freed when it is taken, not when the queue next compacts.
    @Test func aTakenJobIsReleased() {
        final class Token: Sendable {}
        var queue = JobQueue()
        weak var weakToken: Token?
        do {
            let token = Token()
            weakToken = token
            queue.push { _ = token }
            queue.push {}
            queue.push {}
        }
        #expect(weakToken != nil)
        _ = queue.pop()
        #expect(weakToken == nil, "the first job's capture outlived its taking")
        #expect(queue.count == 2)
    }

    /// Records the order jobs ran in.
    final class Ran: @unchecked Sendable {
        private(set) var values: [Int] = []
        func append(_ n: Int) { values.append(n) }
    }
}
