// TwoLanes: runs a batch of blocking file operations on both cores (this thread and one Dispatch worker).

import Dispatch

/// Runs `body(index, lane)` for every index in `0..<count`, lane 0 taking the even indices and
/// lane 1 the odd ones, on two threads, and returns the results in index order once both are
/// done. For batches of file creations and fsyncs, whose cost is mostly in the kernel: two at a
/// time use both cores and let the file system commit fsyncs together.
func inTwoLanes<T: Sendable>(_ count: Int, _ body: @Sendable (_ index: Int, _ lane: Int) -> T) -> [T] {
    guard count > 1 else { return (0..<count).map { body($0, 0) } }
    let results = LaneSlots(UnsafeMutableBufferPointer<T>.allocate(capacity: count))
    defer { results.slots.deallocate() }
    DispatchQueue.concurrentPerform(iterations: 2) { lane in
        // Each lane initializes only its own indices.
        for i in stride(from: lane, to: count, by: 2) { (results.slots.baseAddress! + i).initialize(to: body(i, lane)) }
    }
    let out = Array(results.slots)
    _ = results.slots.deinitialize()
    return out
}

/// Values that two lanes share without synchronization because each touches disjoint parts
/// (result slots by index; a per-lane compressor; content bytes only read). The caller keeps
/// them alive and unmodified until ``inTwoLanes(_:_:)`` returns.
struct LaneSlots<Value>: @unchecked Sendable {
    let slots: Value
    init(_ slots: Value) { self.slots = slots }
}
