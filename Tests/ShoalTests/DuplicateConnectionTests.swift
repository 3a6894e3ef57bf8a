// DuplicateConnectionTests: two nodes that each know the other's address hold one connection,
// not two, so a change arrives once (over real TLS on loopback).

import Foundation
import Testing
import Shoal

@Suite(.timeLimit(.minutes(5))) struct DuplicateConnectionTests {
    @Test func twoNodesThatDialEachOtherKeepOneConnection() async throws {
        let root = NSTemporaryDirectory() + "shoal-duplicate-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try await ShoalNode.open(directory: root + "/a"), b = try await ShoalNode.open(directory: root + "/b")
        let notes = RecordZone.ID(name: "notes")
        try await a.createZone(notes)
        let pa = try await a.listen(host: "127.0.0.1", port: 0), pb = try await b.listen(host: "127.0.0.1", port: 0)
        defer {
            Task {
                await a.shutdown(); await b.shutdown()
            }
        }
        // Both trust and dial each other at once.
        async let ta = a.trustDevice(b.deviceID, name: "b", address: "127.0.0.1:\(pb)")
        async let tb = b.trustDevice(a.deviceID, name: "a", address: "127.0.0.1:\(pa)")
        _ = try await (ta, tb)
        try await a.shareZone(notes, with: b.deviceID, role: .readWrite)
        // Generous: the first record waits for both handshakes, which the whole suite's load
        // can hold up for tens of seconds.
        var deadline = ContinuousClock.now + .seconds(90)
        var r = Record(recordType: "Note", id: Record.ID(name: "n1", zone: notes))
        r["title"] = .string("once")
        try await a.save(r)
        while (try? await b.record(for: r.id)) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect((try? await b.record(for: r.id)) != nil)
        // Settled: one connection each. A duplicate is closed once the connection kept answers,
        // within moments here, and at the latest at its peer's next ping on a loaded machine.
        let settled = ContinuousClock.now + .seconds(40)
        var ca = await a.connectionCount(), cb = await b.connectionCount()
        while (ca != 1 || cb != 1) && ContinuousClock.now < settled {
            try await Task.sleep(for: .milliseconds(50))
            ca = await a.connectionCount()
            cb = await b.connectionCount()
        }
        #expect(ca == 1 && cb == 1, "a holds \(ca) connections, b \(cb)")
        // The record is in b's store a moment before b's engine counts it: the count is taken
        // once it includes the first record and has stopped moving.
        var before = await b.sync.statistics.recordsReceived
        let counted = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < counted {
            try await Task.sleep(for: .milliseconds(300))
            let now = await b.sync.statistics.recordsReceived
            if now == before && now >= 1 { break }
            before = now
        }
        deadline = ContinuousClock.now + .seconds(30)
        var r2 = Record(recordType: "Note", id: Record.ID(name: "n2", zone: notes))
        r2["title"] = .string("also once")
        try await a.save(r2)
        while (try? await b.record(for: r2.id)) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(300))
        let received = await b.sync.statistics.recordsReceived - before
        #expect(received == 1, "the change arrived \(received) times")
    }
}
