// LaneExecutorTests: tasks that prefer the lane executor, and the default actors they call, run on
// the lane threads and not on the cooperative pool.

import Testing
import ShoalLanes

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
