// ControlSocketTests: the daemon's control socket held to its bounds — request size and time, clients, output.

import Foundation
import Shoal
import Synchronization
import Testing
@testable import shoal

/// A ``ControlServer`` served in this process on a fresh node, driven by plain POSIX clients over
/// its real Unix socket, with small limits where a test needs them.
@Suite(.serialized) struct ControlSocketTests {
    /// Only the user running the daemon may talk to it (the data directory is 0700 as well).
    @Test func theSocketIsTheOwnersAlone() async throws {
        try await ControlFixture.with { f in
            var st = stat()
            #expect(stat(DataDirectory(path: f.directory).socketPath, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o600, "mode \(String(st.st_mode & 0o777, radix: 8))")
        }
    }

    @Test func anOversizedRequestIsRefusedNamingTheLimit() async throws {
        try await ControlFixture.with { f in
            let client = try f.connect()
            let request =
                Array(#"[""#.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: ControlServer.maxRequestBytes)
                + Array("\"]\n".utf8)
            // The daemon stops reading at the limit: the rest of the request is refused, not read.
            _ = try await Shoal.onOwnThread { client.send(request) }
            let answer = try await client.readToEnd()
            let head = String(answer.prefix(300)), tail = String(answer.suffix(300))
            #expect(head.hasPrefix("e error: the request is "))
            #expect(head.contains("bytes, over the control socket's limit of 1048576 bytes (1 MiB)"))
            #expect(tail.hasSuffix("\nx 5\n"))
        }
    }

    @Test func aClientThatSendsNoWholeRequestTimesOut() async throws {
        try await ControlFixture.with(ControlServer.Limits(readTimeout: .milliseconds(200))) { f in
            let silent = try f.connect(), partial = try f.connect()
            partial.send(#"["sta"#)
            for client in [silent, partial] {
                let answer = try await client.readToEnd()
                #expect(answer.hasPrefix("e error: no complete request arrived within 0.2 s"), "\(answer)")
                #expect(answer.hasSuffix("\nx 1\n"), "\(answer)")
            }
        }
    }

    @Test func clientsBeyondTheCapAreRefusedAndTheOthersServed() async throws {
        try await ControlFixture.with(ControlServer.Limits(maxClients: 2)) { f in
            try await f.node.createZone(f.zone)
            // Two watches hold both places.
            let a = try f.connect(), b = try f.connect()
            for client in [a, b] {
                client.send(#"["watch","notes"]"# + "\n")
                #expect(try await client.read(until: "\n").hasPrefix("o watching notes"))
            }
            let refused = try await f.connect().readToEnd()
            #expect(
                refused
                    == "e error: the daemon already serves 2 control clients, its limit; try again when one has finished\nx 5\n",
                "\(refused)")
            // The two served clients are unaffected.
            try await f.saveNotes(count: 1, titleBytes: 5)
            for client in [a, b] { #expect(try await client.read(until: "\n").hasPrefix("o changed Note n0")) }
            // Their places are given back when they go away.
            a.close()
            b.close()
            #expect(
                await Shoal.eventually(10) {
                    let next = try? f.connect()
                    next?.send(#"["zone","list"]"# + "\n")
                    return (try? await next?.readToEnd())?.hasSuffix("\nx 0\n") == true
                })
        }
    }

    @Test func aWatchWhoseClientReadsNothingIsStoppedAndItsSubscriptionRemoved() async throws {
        let limits = ControlServer.Limits(outputBudget: 16 << 10, stallTimeout: .milliseconds(300))
        try await ControlFixture.with(limits) { f in
            try await f.node.createZone(f.zone)
            let client = try f.connect()
            client.send(#"["watch","notes"]"# + "\n")
            #expect(try await client.read(until: "\n").hasPrefix("o watching notes"))
            #expect(await f.watchSubscriptions().count == 1)

            // About 2 MB of changes in one burst, far more than the socket's buffer and the
            // daemon's budget hold; the client reads none of it.
            let count = 4_000, title = 500
            try await f.saveNotes(count: count, titleBytes: title)
            #expect(
                await Shoal.eventually(10) { await f.watchSubscriptions().isEmpty },
                "the watch was stopped and its subscription removed")

            // What had reached the socket before the daemon closed it: part of the output, and no exit code.
            let rest = try await client.readToEnd()
            let received = rest.utf8.count, finished = rest.contains("\nx ")
            #expect(received < count * title / 2, "the client received \(received) bytes")
            #expect(!finished, "the watch was stopped, not finished")
        }
    }

    @Test func aWatchEndsWhenItsClientGoesAway() async throws {
        try await ControlFixture.with { f in
            try await f.node.createZone(f.zone)
            let client = try f.connect()
            client.send(#"["watch","notes"]"# + "\n")
            #expect(try await client.read(until: "\n").hasPrefix("o watching notes"))
            #expect(await f.watchSubscriptions().count == 1)
            client.close()
            #expect(
                await Shoal.eventually(10) { await f.watchSubscriptions().isEmpty },
                "the watch ended and removed its subscription")
        }
    }

    @Test func aClientThatStopsReadingAFinishedCommandGivesItsPlaceBack() async throws {
        // The whole output fits the daemon's budget, so the command finishes; its end waits for
        // a client that reads nothing more, and the one place is held until the daemon gives up.
        let limits = ControlServer.Limits(maxClients: 1, outputBudget: 4 << 20, stallTimeout: .milliseconds(300))
        try await ControlFixture.with(limits) { f in
            try await f.node.createZone(f.zone)
            try await f.saveNotes(count: 3_000, titleBytes: 300)
            let stuck = try f.connect()
            stuck.send(#"["query","notes","--type","Note","--limit","5000"]"# + "\n")
            #expect(try await stuck.read(until: "\n").hasPrefix("o NAME"))
            #expect(
                await Shoal.eventually(10) {
                    let next = try? f.connect()
                    next?.send(#"["zone","list"]"# + "\n")
                    return (try? await next?.readToEnd())?.hasSuffix("\nx 0\n") == true
                }, "the stuck client's place was given back")
            let rest = try await stuck.readToEnd()
            let finished = rest.hasSuffix("\nx 0\n")
            #expect(!finished, "the daemon closed the connection before the end")
        }
    }

    @Test func commandsWaitingForTheirClientsHoldUpNobodyElse() async throws {
        // More commands waiting for clients that read nothing than Swift's pool has threads (one
        // per core); the daemon gives up on them only after `stallTimeout`. Another client is
        // served meanwhile, long before that.
        let stuckCount = ProcessInfo.processInfo.activeProcessorCount + 1
        let limits = ControlServer.Limits(
            maxClients: stuckCount + 1, outputBudget: 16 << 10, stallTimeout: .seconds(20))
        try await ControlFixture.with(limits) { f in
            try await f.node.createZone(f.zone)
            try await f.saveNotes(count: 3_000, titleBytes: 300)
            let start = ContinuousClock.now
            var stuck = [RawClient]()
            for _ in 0..<stuckCount {
                let client = try f.connect()
                client.send(#"["query","notes","--type","Note","--limit","5000"]"# + "\n")
                #expect(try await client.read(until: "\n").hasPrefix("o NAME"))
                stuck.append(client)
            }
            let other = try f.connect()
            other.send(#"["zone","list"]"# + "\n")
            let answer = try await other.readToEnd()
            let waited = ContinuousClock.now - start
            #expect(answer.hasSuffix("\nx 0\n") && waited < limits.stallTimeout, "answered after \(waited): \(answer)")
            for client in stuck { client.close() }
        }
    }

    @Test func largeOutputArrivesWholeWhenTheClientReads() async throws {
        let limits = ControlServer.Limits(outputBudget: 16 << 10, stallTimeout: .seconds(5))
        try await ControlFixture.with(limits) { f in
            try await f.node.createZone(f.zone)
            let count = 3_000
            try await f.saveNotes(count: count, titleBytes: 300)
            let client = try f.connect()
            client.send(#"["query","notes","--type","Note","--limit","5000"]"# + "\n")
            // About 1 MB: the client waits before reading, so the daemon fills the socket and its
            // budget and has to wait for it.
            let answer = try await client.readToEnd(after: .milliseconds(300))
            let rows = answer.split(separator: "\n").filter { $0.hasPrefix("o n") }
            let names = Set(rows.compactMap { $0.dropFirst(2).split(separator: " ").first.map(String.init) })
            let missing = (0..<count).map { "n\($0)" }.filter { !names.contains($0) }
            #expect(
                rows.count == count && missing.isEmpty,
                "\(rows.count) rows; missing \(missing.count), from \(missing.first ?? "-")")
            let tail = String(answer.suffix(300))
            #expect(tail.hasSuffix("o (\(count) records)\nx 0\n"), "\(tail)")
        }
    }
}

/// A fresh node in a temporary directory and a ``ControlServer`` on its control socket.
struct ControlFixture: Sendable {
    let directory: String
    let node: ShoalNode
    let zone = RecordZone.ID(name: "notes")

    /// Runs `body` with a served fixture, and stops and removes it afterwards.
    static func with(
        _ limits: ControlServer.Limits = ControlServer.Limits(), _ body: (ControlFixture) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-control-\(UInt32.random(in: 0 ... .max))"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let node = try await ShoalNode.open(directory: directory)
        let server = try await ControlServer.start(at: DataDirectory(path: directory).socketPath, node: node)
        let serving = Task { await ControlServer.serve(server, node: node, limits: limits) }
        defer { serving.cancel() }
        let fixture = ControlFixture(directory: directory, node: node)
        do {
            try await body(fixture)
        } catch {
            try? await server.channel.close().get()
            throw error
        }
        try? await server.channel.close().get()
    }

    /// A new client of the control socket.
    func connect() throws -> RawClient {
        guard let fd = ControlClient.connectSocket(DataDirectory(path: directory)) else {
            throw CocoaError(.fileReadNoSuchFile)
        }
        return RawClient(fd: fd)
    }

    /// The IDs of the subscriptions `watch` made.
    func watchSubscriptions() async -> [String] {
        await node.store.allSubscriptions().map(\.id).filter { $0.hasPrefix("shoal.watch.") }
    }

    /// Saves notes `n0`… in one transaction, each with a title of `titleBytes` letters.
    func saveNotes(count: Int, titleBytes: Int) async throws {
        let title = String(repeating: "t", count: titleBytes)
        let records = (0..<count).map { i in
            var r = Record(recordType: "Note", id: Record.ID(name: "n\(i)", zone: zone))
            r["title"] = .string(title)
            return r
        }
        try await node.store.modify(saving: records)
    }
}

/// A client of the control socket through plain POSIX calls, as a script might be. Reads block,
/// so they run on a thread of their own, and give up after 15 s without a byte.
final class RawClient: Sendable {
    let fd: Int32
    private let closed = Mutex(false)

    init(fd: Int32) {
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
    }

    deinit { close() }

    /// Writes all of `bytes`; false when the daemon closed the connection first (no SIGPIPE).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Everything until the daemon closes the connection, read after waiting `after`.
    func readToEnd(after pause: Duration? = nil) async throws -> String {
        if let pause { try await Task.sleep(for: pause) }
        return try await Shoal.onOwnThread { self.receive(until: nil) }
    }

    /// What arrives until it contains `marker` (or the connection closes).
    func read(until marker: String) async throws -> String {
        try await Shoal.onOwnThread { self.receive(until: marker) }
    }

    /// Closes the connection (once; also when the client is released).
    func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        if first { Glibc.close(fd) }
    }

    private func receive(until marker: String?) -> String {
        var data = [UInt8](), buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            data += buffer[0..<n]
            if let marker, String(decoding: data, as: UTF8.self).contains(marker) { break }
        }
        return String(decoding: data, as: UTF8.self)
    }
}
