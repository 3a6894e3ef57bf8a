// ShoalNodeErrorTests: every façade call throws ShoalError — asset, network and cancellation
// failures included — with CloudKit's codes, retryAfter where retrying helps, and the lower
// layer's error kept as its underlying error.

import Foundation
import Testing
@testable import Shoal

@Suite(.timeLimit(.minutes(5))) struct ShoalNodeErrorTests {
    static let notes = RecordZone.ID(name: "notes")

    static func node() async throws -> (ShoalNode, String) {
        let dir = NSTemporaryDirectory() + "shoal-errors-\(UUID().uuidString)"
        let node = try await ShoalNode.open(directory: dir)
        try await node.createZone(notes)
        return (node, dir)
    }

    static func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: notes))
        r["title"] = .string(name)
        return r
    }

    /// A file of `bytes` random bytes in `dir`.
    static func file(in dir: String, bytes: Int) throws -> String {
        let path = dir + "/attachment-\(UUID().uuidString)"
        try Data((0..<bytes).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aMissingFileIsAssetFileNotFoundAndNothingIsSaved() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            try await node.save(Self.note("n"), attaching: ["photo": dir + "/no-such-file"])
            Issue.record("the save should have failed")
        } catch {
            #expect(error.code == .assetFileNotFound)
            #expect(error.underlyingError is AssetError, "\(String(describing: error.underlyingError))")
            #expect(error.message.contains("no-such-file"), "\(error.message)")
        }
        await #expect(throws: ShoalError.self) { try await node.record(for: Self.note("n").id) }
    }

    @Test func fetchingWhileOfflineIsNetworkUnavailableWithRetryAfter() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let asset = Asset(hash: try #require(ContentHash(bytes: [UInt8](repeating: 7, count: 32))), size: 8)
        do {
            try await node.fetchAsset(asset)
            Issue.record("the fetch should have failed")
        } catch {
            #expect(error.code == .networkUnavailable, "\(error)")
            #expect(error.retryAfter == .seconds(5) && error.message.contains("offline"))
        }
    }

    /// Online with a peer that does not hold the asset: `assetNotAvailable`, with the fetch
    /// engine's error underneath.
    @Test func anAssetNoPeerHoldsIsAssetNotAvailable() async throws {
        let root = NSTemporaryDirectory() + "shoal-errors-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try await ShoalNode.open(directory: root + "/a"), b = try await ShoalNode.open(directory: root + "/b")
        try await a.createZone(Self.notes)
        let port = try await b.listen(host: "127.0.0.1", port: 0)
        try await a.trustDevice(b.deviceID, name: "b", address: "127.0.0.1:\(port)")
        try await b.trustDevice(a.deviceID, name: "a")
        try await a.listen(host: "127.0.0.1", port: 0)
        defer {
            Task {
                await a.shutdown(); await b.shutdown()
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while await a.connectedDevices().isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let asset = Asset(hash: try #require(ContentHash(bytes: [UInt8](repeating: 8, count: 32))), size: 8)
        do {
            try await a.fetchAsset(asset)
            Issue.record("the fetch should have failed")
        } catch {
            #expect(error.code == .assetNotAvailable, "\(error)")
            #expect(error.retryAfter == .seconds(5))
            #expect(error.underlyingError is AssetFetchError)
        }
    }

    @Test func cancelledOperationsAreOperationCancelledAndKeepNothing() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.file(in: dir, bytes: 200_000)
        let saving = Task { () async throws -> Record in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await node.save(Self.note("cancelled"), attaching: ["photo": path])
        }
        let saved = await saving.result
        guard case .failure(let failure) = saved, let e = failure as? ShoalError else {
            Issue.record("a cancelled save saved"); return
        }
        #expect(e.code == .operationCancelled && e.underlyingError is CancellationError)
        await #expect(throws: ShoalError.self) { try await node.record(for: Self.note("cancelled").id) }

        let asset = Asset(hash: try #require(ContentHash(bytes: [UInt8](repeating: 9, count: 32))), size: 9)
        let fetching = Task { () async throws in
            withUnsafeCurrentTask { $0?.cancel() }
            try await node.fetchAsset(asset)
        }
        guard case .failure(let fetchFailure) = await fetching.result, let f = fetchFailure as? ShoalError else {
            Issue.record("a cancelled fetch succeeded"); return
        }
        #expect(f.code == .operationCancelled)

        let collecting = Task { () async throws -> GarbageCollectionReport in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await node.collectAssetGarbage()
        }
        guard case .failure(let collectFailure) = await collecting.result, let g = collectFailure as? ShoalError else {
            Issue.record("a cancelled collection ran"); return
        }
        #expect(g.code == .operationCancelled)
        await node.shutdown()
    }

    /// Cancelled during the import of a large file: the import stops at its next buffer, and the
    /// record is not saved.
    @Test func cancellingDuringALargeImportStopsIt() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.file(in: dir, bytes: 16 << 20)
        let box = CancelBox()
        let reports = ReportCount()
        let saving = Task { () async throws -> Record in
            try await node.save(Self.note("big"), attaching: ["photo": path]) { _ in
                reports.add()
                box.cancel()
            }
        }
        box.set(saving)
        guard case .failure(let failure) = await saving.result, let e = failure as? ShoalError else {
            Issue.record("a save cancelled during its import saved"); return
        }
        #expect(e.code == .operationCancelled, "\(e)")
        #expect(reports.count < 8, "the import went on after the cancellation (\(reports.count) reports for 16 MiB)")
        await #expect(throws: ShoalError.self) { try await node.record(for: Self.note("big").id) }
    }

    /// The bytes of an asset come through the façade's own sequence, which fails only with
    /// ShoalError.
    @Test func assetBytesRoundTripAndFailWithShoalError() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.file(in: dir, bytes: 300_000)
        let saved = try await node.save(Self.note("photo"), attaching: ["photo": path])
        guard case .asset(let asset)? = saved["photo"] else { Issue.record("no asset field"); return }
        var bytes = [UInt8]()
        let contents = try await node.contents(of: asset)
        #expect(contents.manifest.asset == asset && contents.asset == asset)
        do {
            for try await chunk in contents { bytes += chunk }
        } catch {
            let typed: ShoalError = error  // iteration throws ShoalError, nothing else
            Issue.record("\(typed)")
        }
        #expect(bytes == [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    @Test func garbageCollectionReportsItsProgress() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await node.createZone(RecordZone.ID(name: "lab"))
        try await node.modify(saving: (0..<5).map { Self.note("n\($0)") })
        let seen = ReportLog()
        _ = try await node.collectAssetGarbage(dryRun: true) { seen.add($0) }
        let last = try #require(seen.all.last)
        #expect(last.zones == 2 && last.zonesRead == 2 && last.recordsRead == 5, "\(seen.all)")
        #expect(seen.all.map(\.zonesRead) == seen.all.map(\.zonesRead).sorted(), "never backwards")
    }

    @Test func anAddressInUseIsNetworkFailureNamingIt() async throws {
        let (a, dirA) = try await Self.node(), (b, dirB) = try await Self.node()
        defer { for d in [dirA, dirB] { try? FileManager.default.removeItem(atPath: d) } }
        let port = try await a.listen(host: "127.0.0.1", port: 0)
        do {
            try await b.listen(host: "127.0.0.1", port: port)
            Issue.record("a second node listened on the same port")
        } catch {
            #expect(error.code == .networkFailure)
            #expect(error.underlyingError != nil && error.message.contains("127.0.0.1:\(port)"), "\(error)")
        }
        await a.shutdown()
        await b.shutdown()
    }

    @Test func aFullDiskIsQuotaExceeded() {
        let e = ShoalError.mapped(
            AssetError.io("writing a chunk", "/data/assets/x", errno: ENOSPC), doing: "saving notes/n")
        #expect(e.code == .quotaExceeded && e.message.contains("free space"), "\(e)")
        let other = ShoalError.mapped(
            AssetError.io("writing a chunk", "/data/assets/x", errno: EIO), doing: "saving notes/n")
        #expect(other.code == .internalError && other.underlyingError is AssetError)
    }
}

/// Progress reports, collected from the reporting callback.
final class ReportLog: @unchecked Sendable {
    private let lock = NSLock()
    private var reports: [ShoalNode.GarbageCollectionProgress] = []
    func add(_ p: ShoalNode.GarbageCollectionProgress) { lock.withLock { reports.append(p) } }
    var all: [ShoalNode.GarbageCollectionProgress] { lock.withLock { reports } }
}

/// Cancels a task once both the task is known and a cancellation was asked for, in either order.
final class CancelBox: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<Record, any Error>?
    private var asked = false
    func set(_ t: Task<Record, any Error>) {
        lock.withLock {
            task = t; if asked { t.cancel() }
        }
    }
    func cancel() {
        lock.withLock {
            asked = true; task?.cancel()
        }
    }
}

/// Counts progress reports.
final class ReportCount: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.withLock { n += 1 } }
    var count: Int { lock.withLock { n } }
}
