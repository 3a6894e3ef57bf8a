// ControlOutput: a control command's output on its way to the client, bounded, with backpressure.

import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import Shoal
#if canImport(Glibc)
    import Glibc
#endif

/// A command's output on its way to the client's socket, with backpressure: at most `budget`
/// bytes wait in the daemon (plus the line being added).
///
/// ``send(_:replaceable:)`` is called by ``Console``, synchronously, from the command's task.
/// When the queue is full it blocks that thread (the command's own: ``CommandThread``) until the
/// socket takes some of it: the bytes are written by the channel's event loop, never by a thread
/// of Swift's pool, so the wait ends as soon as the client reads. A client that reads nothing for
/// `stallTimeout` gets its connection closed, which cancels the command; lines sent after the
/// close are dropped, since nobody will read them.
///
/// Nothing else may wait: a progress line (which the next one replaces) is dropped when the
/// queue is full, and any other line printed from another thread (an actor the command called,
/// which others are waiting for) closes the connection as a stalled client would.
final class ControlOutput: @unchecked Sendable {
    private let channel: any Channel
    private let thread: CommandThread
    private let budget: Int
    private let stallTimeout: TimeInterval
    private let condition = NSCondition()
    /// Bytes handed to the channel and not yet written to the socket.
    private var queued = 0
    /// Bytes written to the socket (or given up with the connection) so far.
    private var drained = 0
    private var closed = false

    init(channel: any Channel, thread: CommandThread, budget: Int, stallTimeout: Duration) {
        self.channel = channel
        self.thread = thread
        self.budget = budget
        self.stallTimeout = stallTimeout.inSeconds
    }

    /// Sends one line (`text` and a newline), waiting while the queue is full; a `replaceable`
    /// line (progress) is dropped instead.
    func send(_ text: String, replaceable: Bool = false) {
        var buffer = channel.allocator.buffer(capacity: text.utf8.count + 1)
        buffer.writeString(text)
        buffer.writeInteger(UInt8(ascii: "\n"))
        let size = buffer.readableBytes
        var stalled = false
        condition.lock()
        let full = queued > 0 && queued + size > budget
        if closed || (full && replaceable) {
            condition.unlock()
            return
        }
        if full && !thread.isCurrent {
            stalled = true
        } else {
            var seen = drained
            var deadline = Date(timeIntervalSinceNow: stallTimeout)
            while !closed && queued > 0 && queued + size > budget {
                if drained != seen {
                    seen = drained
                    deadline = Date(timeIntervalSinceNow: stallTimeout)
                }
                if !condition.wait(until: deadline) && drained == seen {
                    stalled = true
                    break
                }
            }
        }
        if stalled { closed = true }
        if closed {
            condition.unlock()
            if stalled { channel.close(promise: nil) }
            return
        }
        queued += size
        condition.unlock()
        let channel = channel, line = buffer
        channel.eventLoop.execute {
            channel.writeAndFlush(line).whenComplete { _ in self.drain(size) }
        }
    }

    /// Sends `x CODE` and closes the connection once everything before it is written, or once
    /// the client has read none of it for `stallTimeout`.
    func finish(_ code: Int32) {
        let line = ByteBuffer(string: "x \(code)\n"), size = line.readableBytes
        let seen: Int? = condition.withLock {
            guard !closed else { return nil }
            queued += size
            return drained
        }
        guard let seen else { return }
        let channel = channel
        channel.eventLoop.execute {
            channel.writeAndFlush(line).whenComplete { _ in
                self.drain(size)
                channel.close(promise: nil)
            }
        }
        closeIfStalled(since: seen)
    }

    /// Closes the connection if, `stallTimeout` from now, output is still queued and none of it
    /// was written since `drained` was `seen`; checks again later while it moves.
    private func closeIfStalled(since seen: Int) {
        channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(stallTimeout * 1e9))) { [self] in
            let (waiting, now) = condition.withLock { (queued > 0 && !closed, drained) }
            guard waiting else { return }
            if now == seen { channel.close(promise: nil) } else { closeIfStalled(since: now) }
        }
    }

    /// The connection closed: wakes a waiting ``send(_:)``; later lines are dropped.
    func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }

    private func drain(_ size: Int) {
        condition.withLock {
            queued -= size
            drained += size
            condition.broadcast()
        }
    }
}
