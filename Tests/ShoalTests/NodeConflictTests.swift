// NodeConflictTests: two nodes over real TLS on loopback edit one field while apart; with
// different resolvers, both end up holding what the deciding node's resolver returned.

import Foundation
import Testing
import Shoal

@Suite(.timeLimit(.minutes(5))) struct NodeConflictTests {
    static let notes = RecordZone.ID(name: "notes")

    /// Waits until `condition` holds, for at most 240 s (the whole suite starts at once, and on
    /// two cores its first minutes are slow).
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(240)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test func bothNodesHoldTheResolversResultAfterEditingApart() async throws {
        let root = NSTemporaryDirectory() + "shoal-conflict-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try await ShoalNode.open(directory: root + "/a"), b = try await ShoalNode.open(directory: root + "/b")
        try await a.createZone(Self.notes)
        var r = Record(recordType: "Note", id: Record.ID(name: "n1", zone: Self.notes))
        r["title"] = .string("draft")
        r["body"] = .string("text")
        try await a.save(r)
        let port = try await Self.listenBelowEphemeralPorts(b)
        // b trusts a before a dials it: a dial b refuses would back off, and the record would
        // wait for the next attempt.
        try await b.trustDevice(a.deviceID, name: "a")
        try await a.trustDevice(b.deviceID, name: "b", address: "127.0.0.1:\(port)")
        try await a.shareZone(Self.notes, with: b.deviceID, role: .readWrite)
        _ = try await Self.listenBelowEphemeralPorts(a)
        defer {
            Task {
                await a.shutdown(); await b.shutdown()
            }
        }
        #expect(try await Self.eventually { (try? await b.record(for: r.id)) != nil }, "b received the record")
        // CloudKit's database scopes: a owns the zone, b has it shared.
        let (aPrivate, aShared) = (await a.zones(in: .private).map(\.id), await a.zones(in: .shared).map(\.id))
        let (bPrivate, bShared) = (await b.zones(in: .private).map(\.id), await b.zones(in: .shared).map(\.id))
        #expect(aPrivate == [Self.notes] && aShared.isEmpty && bShared == [Self.notes] && bPrivate.isEmpty)

        // Apart, a edits the title, then b edits the title and the body.
        await a.goOffline()
        await b.goOffline()
        var ea = try await a.record(for: r.id), eb = try await b.record(for: r.id)
        ea["title"] = .string("a's title")
        try await a.save(ea)
        try await Task.sleep(for: .milliseconds(5))
        eb["title"] = .string("b's title")
        eb["body"] = .string("b's body")
        try await b.save(eb)

        // Different resolvers: a joins both titles, b would take its own. a wrote the older
        // side, so a's decides, and b never runs its own.
        await a.setConflictResolver(for: Self.notes) { c in
            var out = c.merged
            let titles = [c.local, c.remote].compactMap { rec -> String? in
                if case .string(let s)? = rec["title"] { return s } else { return nil }
            }
            out["title"] = .string(titles.sorted().joined(separator: " + "))
            return out
        }
        await b.setConflictResolver(for: Self.notes) { c in
            var out = c.merged
            out["title"] = c.local["title"]
            return out
        }
        let eventsA = await a.conflicts(), eventsB = await b.conflicts()
        try await a.goOnline()
        try await b.goOnline()

        let expected = "a's title + b's title"
        #expect(
            try await Self.eventually {
                let x = try await a.record(for: r.id), y = try await b.record(for: r.id)
                return x == y && x["title"] == .string(expected)
            }, "both nodes hold the resolver's result")
        let held = try await b.record(for: r.id)
        #expect(held["body"] == .string("b's body"), "the field without a conflict keeps b's edit")
        #expect(try await a.digest(of: Self.notes) == (try await b.digest(of: Self.notes)))

        let seenA = await Self.first(eventsA, within: .seconds(10))
        guard case .resolved(let resolved)? = seenA?.outcome else {
            Issue.record("a: \(String(describing: seenA?.outcome))"); return
        }
        #expect(resolved == held)
        #expect(seenA?.conflict.fieldNames == ["title"] && seenA?.conflict.ancestor?["title"] == .string("draft"))
        // b reports the conflict only if a's edit reached it before a's resolution did.
        if let seenB = await Self.first(eventsB, within: .milliseconds(500)) {
            guard case .decidedBy(let decider) = seenB.outcome else { Issue.record("b: \(seenB.outcome)"); return }
            #expect(decider == held.versionVector.latest?.node)
        }
    }

    /// Listens on a loopback port below the kernel's ephemeral range, and returns it.
    ///
    /// `goOnline()` binds the port the node listened on before `goOffline()`. A port from the
    /// ephemeral range (what port 0 picks) may meanwhile become the source port of another
    /// test's connection or another listener's port, and the bind fails ("address already in
    /// use"); the kernel never hands out a port below the range by itself.
    static func listenBelowEphemeralPorts(_ node: ShoalNode) async throws -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let low = range.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768
        var rng = SystemRandomNumberGenerator()
        var failure: (any Error)? = nil
        for _ in 0..<64 {
            do {
                return try await node.listen(
                    host: "127.0.0.1", port: Int.random(in: max(1024, low / 2)..<max(1025, low), using: &rng))
            } catch {
                failure = error
            }
        }
        throw failure ?? CancellationError()
    }

    /// The first event of `events` within `limit`, or nil.
    static func first(_ events: AsyncStream<ConflictEvent>, within limit: Duration) async -> ConflictEvent? {
        await withTaskGroup(of: ConflictEvent?.self) { g in
            g.addTask {
                for await e in events { return e }; return nil
            }
            g.addTask {
                try? await Task.sleep(for: limit); return nil
            }
            let e = await g.next() ?? nil
            g.cancelAll()
            return e
        }
    }
}
