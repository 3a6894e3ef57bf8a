// RefusedSyncWriteTests: a replication write the store refuses is logged, not dropped silently.

import CShoalPowerCut
import Logging
import ShoalStore
import ShoalWire
@testable import ShoalSync
import Synchronization
import Testing

extension PowerLossTests {
    /// The disk fills before the engine stores a zone's knowledge and a peer's position: neither
    /// write throws to the connection (the peer resends what they cover), and each is logged at
    /// warning level with its zone and the store's error. With space back, both are stored.
    @Test func knowledgeAndPositionWritesTheDiskRefusesAreLogged() async throws {
        let run = PowerCut(seed: 1)
        let dir = ScratchDirectory("shoal-diskfull-syncstate")
        let peer = NodeID(high: 7, low: 7)
        do {
            let s = try Store.open(
                directory: dir.path, configuration: run.configuration(vfs: false, checkpointPages: 256))
            try await s.createZone(run.remoteZone)
        }
        #expect(shoal_powercut_register() == 0)
        shoal_powercut_reset(1, 0)
        let lines = CapturedLines()
        do {
            let s = try Store.open(
                directory: dir.path, configuration: run.configuration(vfs: true, checkpointPages: 256))
            let token = try await s.changes(in: run.remoteZone, since: nil).token
            // The sync-state table exists before the disk fills (the first read creates it).
            _ = try await s.syncValue(.knowledge(zone: run.remoteZone))
            var configuration = SyncConfiguration()
            configuration.logger = Logger(label: "test", factory: { _ in CapturingLogHandler(lines) })
            let sync = SyncNode(store: s, configuration: configuration)
            let knowledge = VersionVector([(peer, HLC(rawValue: 1 << 20))])

            shoal_powercut_fill_disk_at(shoal_powercut_events() + 1)
            await sync.addKnowledge(knowledge, to: run.remoteZone)
            await sync.setPosition(token, peer: peer, zone: run.remoteZone)
            let logged = lines.all
            #expect(logged.count == 2, "\(logged)")
            #expect(logged.first?.hasPrefix("warning knowledge of \(run.remoteZone) not stored: ") == true, "\(logged)")
            #expect(
                logged.last?.hasPrefix("warning position in \(peer.short)'s feed of \(run.remoteZone) not stored: ")
                    == true, "\(logged)")
            #expect(try await s.syncValue(.knowledge(zone: run.remoteZone)) == nil)

            shoal_powercut_fill_disk_at(0)  // space returns
            await sync.addKnowledge(knowledge, to: run.remoteZone)
            await sync.setPosition(token, peer: peer, zone: run.remoteZone)
            #expect(lines.all.count == 2, "\(lines.all)")
            #expect(try await s.syncValue(.knowledge(zone: run.remoteZone)) != nil)
            #expect(try await s.syncValue(.position(peer: peer, zone: run.remoteZone)) == token.bytes)
        }
        #expect(await Self.closedThroughTheVFS())
        shoal_powercut_reset(0, 0)
    }
}

/// Log lines captured by ``CapturingLogHandler``: level, then message.
final class CapturedLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// A swift-log handler that keeps each line.
struct CapturingLogHandler: LogHandler {
    let lines: CapturedLines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    init(_ lines: CapturedLines) { self.lines = lines }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        lines.append("\(level) \(message)")
    }
}
