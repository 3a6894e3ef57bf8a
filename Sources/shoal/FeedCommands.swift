// FeedCommands: `shoal changes`, `watch`, `status` and `digest`.

import ArgumentParser
import Foundation
import Shoal

struct ChangesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes", abstract: "Show what changed in a zone since a token, and the next token.")
    @OptionGroup var options: NodeOptions
    @Argument(help: "The zone: name or name@owner.") var zone: String
    @Option(name: .long, help: "A token printed by an earlier `shoal changes` (omit for everything).") var since:
        String?
    @Option(name: .long, help: "At most this many records.") var limit = 1_000

    func run() async throws {
        try await reportFailures {
            var token: ChangeToken? = nil
            if let since {
                guard let t = ChangeToken(text: since) else {
                    throw CommandFailure(
                        .badInput, "--since \(since.debugDescription) is not a token printed by `shoal changes`")
                }
                token = t
            }
            try await options.withNode { node in
                let c = try await node.changes(in: parseZone(zone), since: token, limit: limit)
                if options.json {
                    Console.current.line(
                        RecordFormatting.jsonText([
                            "changed": c.modifiedRecords.map(RecordFormatting.json),
                            "deleted": c.deletions.map { ["name": $0.id.name, "type": $0.recordType] },
                            "moreComing": c.moreComing, "token": c.token.description
                        ]))
                } else {
                    for r in c.modifiedRecords { Console.current.line("changed \(r.recordType) \(r.id.name)") }
                    for d in c.deletions { Console.current.line("deleted \(d.recordType) \(d.id.name)") }
                    Console.current.line(
                        "token \(c.token)\(c.moreComing ? " (more coming: run again with --since this token)" : "")")
                }
            }
        }
    }
}

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print every change to a zone as it is committed, local or from a peer (Ctrl-C to stop).")
    @OptionGroup var options: NodeOptions
    @Argument(help: "The zone: name or name@owner.") var zone: String
    @Option(name: .long, help: "Stop after this many changes (for scripts and tests).") var count: Int?

    func run() async throws {
        try await reportFailures {
            let z = parseZone(zone)
            try await options.withNode { node in
                let subscription = "shoal.watch.\(UInt32.random(in: 0 ... .max))"
                try await node.store.saveSubscription(Subscription(id: subscription, kind: .zone(z)))
                // The subscription goes however the watch ends: --count reached, an error, or its
                // task cancelled (inside the daemon, when the client goes away or stops reading).
                let ended: Result<Void, any Error>
                do {
                    try await follow(z, subscription: subscription, node: node)
                    ended = .success(())
                } catch {
                    ended = .failure(error)
                }
                try? await node.store.deleteSubscription(id: subscription)
                try ended.get()
            }
        }
    }

    /// Prints the changes to `z` that `subscription` announces until `--count` is reached or
    /// the task is cancelled.
    private func follow(_ z: RecordZone.ID, subscription: String, node: ShoalNode) async throws {
        let notifications = await node.store.notifications()
        var token = try await node.changes(in: z, since: nil, limit: 1).token
        // Start from now: skip what is already there.
        while true {
            let c = try await node.changes(in: z, since: token, limit: 10_000)
            token = c.token
            if !c.moreComing { break }
        }
        Console.current.line(
            options.json ? RecordFormatting.jsonText(["watching": z.description]) : "watching \(z) (Ctrl-C to stop)")
        var seen = 0
        // Ends (nil) when the task is cancelled.
        for await n in notifications where n.subscriptionID == subscription {
            _ = n
            let c = try await node.changes(in: z, since: token, limit: 10_000)
            token = c.token
            for r in c.records {
                if Task.isCancelled { return }
                let what = r.isDeleted ? "deleted" : "changed"
                if options.json {
                    Console.current.line(
                        RecordFormatting.jsonText(["event": what, "record": RecordFormatting.json(r)])
                            .replacingOccurrences(of: "\n", with: ""))
                } else {
                    Console.current.line(
                        "\(what) \(r.recordType) \(r.id.name)"
                            + (r.isDeleted
                                ? ""
                                : ": "
                                    + r.allKeys.compactMap { k in r[k].map { "\(k)=\(RecordFormatting.text($0))" } }
                                    .joined(separator: " ")))
                }
                seen += 1
                if let count, seen >= count { return }
            }
        }
    }
}

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract:
            "Show the node, its trusted devices (how each was found, when each was last heard from), its peers, its zones, the deleted zones it keeps (and the peers each waits for) and replication counters."
    )
    @OptionGroup var options: NodeOptions

    func run() async throws {
        try await reportFailures {
            try await options.withNode { node in
                let peers = await node.peers()
                let zones = await node.zones()
                let stats = await node.sync.statistics
                let errors = await node.sync.lastErrors()
                let connections = await node.connectionCount()
                let links = await node.sync.replication()
                let traffic = await node.traffic()
                let caps = node.networkConfiguration
                let devices = await TrustedDeviceReport.all(node)
                let deletedZones = try await node.zoneTombstones()
                let purgedZones = try await node.purgedZoneCount()
                let discovery = await node.discoveryStatus()
                // The counters /metrics exports too, read from the same places.
                let perPeer = await node.sync.peerStatistics.sorted { $0.key < $1.key }
                let gc = await node.garbageCollected
                let stored = node.assets.storedBytes
                func inbound(_ l: SyncNode.ZoneReplication) -> String {
                    !l.receiving
                        ? "-"
                        : l.receivedCaughtUp
                            ? "caught up (\(l.recordsReceived) received)"
                            : "catching up (\(l.recordsReceived) received)"
                }
                func outbound(_ l: SyncNode.ZoneReplication) -> String {
                    !l.sending
                        ? "-"
                        : l.sentCaughtUp && l.unacknowledgedBatches == 0
                            ? "up to date" : "sending (\(l.unacknowledgedBatches) batches unacknowledged)"
                }
                var zoneRows = [[String]]()
                var zoneJSON = [[String: Any]]()
                for z in zones {
                    let d = try await node.digest(of: z.id)
                    let t = try await node.tombstoneState(of: z.id)
                    let held = t.heldBackBy.sorted { $0.key < $1.key }
                    zoneRows.append([
                        z.id.description, String(t.liveRecords), String(t.tombstones),
                        t.horizon.isEmpty ? "-" : "\(t.horizon.entries.count) writers",
                        held.isEmpty ? "-" : held.map { "\($0.key.short) (\($0.value))" }.joined(separator: ", "),
                        String(d.description.prefix(16))
                    ])
                    zoneJSON.append([
                        "zone": z.id.description, "records": t.liveRecords, "tombstones": t.tombstones,
                        "purgeHorizon": Dictionary(
                            uniqueKeysWithValues: t.horizon.entries.map { ($0.node.hex, $0.hlc.rawValue) }),
                        "knownPeers": t.knownPeers.map(\.hex),
                        "heldBackBy": Dictionary(uniqueKeysWithValues: held.map { ($0.key.hex, $0.value) }),
                        "digest": String(d.description.prefix(16))
                    ])
                }
                if options.json {
                    Console.current.line(
                        RecordFormatting.jsonText([
                            "node": node.nodeID.hex, "connections": connections,
                            "devices": devices.map {
                                [
                                    "device": $0.device.device.text, "name": $0.device.name,
                                    "connected": $0.isConnected, "found": $0.foundJSON
                                ]
                                .merging($0.lastSeenJSON) { a, _ in a } as [String: Any]
                            },
                            "peers": peers.map {
                                [
                                    "address": $0.address, "connected": $0.isConnected,
                                    "node": $0.node?.hex ?? NSNull(), "failures": $0.failures,
                                    "lastError": $0.lastError ?? NSNull()
                                ] as [String: Any]
                            },
                            "zones": zoneJSON,
                            "deletedZones": deletedZones.map {
                                [
                                    "zone": $0.zone.description, "incarnation": $0.incarnation.hex,
                                    "deleted": $0.deletedAt.description,
                                    "knownPeers": $0.knownPeers.map(\.hex), "waitingFor": $0.waitingFor.map(\.hex),
                                    "devicesNotHeardFrom": $0.peersMissing
                                ] as [String: Any]
                            },
                            "purgedZones": purgedZones,
                            "received": ["records": stats.recordsReceived, "batches": stats.batchesReceived],
                            "sent": ["records": stats.recordsSent, "batches": stats.batchesSent],
                            "fieldDeltas": [
                                "sent": stats.fieldDeltasSent, "bytesSaved": stats.fieldDeltaBytesSaved,
                                "applied": stats.fieldDeltasApplied,
                                "recordsAskedWhole": stats.recordsWantedWhole,
                                "recordsSentWhole": stats.recordsSentWhole
                            ],
                            "errors": Dictionary(uniqueKeysWithValues: errors.map { ($0.key.hex, $0.value) }),
                            "refused": [
                                "permission": stats.refusedForPermission, "batches": stats.refusedBatches,
                                "knowledge": stats.refusedKnowledge,
                                "sharesIgnored": stats.sharesIgnored,
                                "unsignedZoneChanges": stats.unsignedZoneChangesIgnored
                            ],
                            "assets": [
                                "fetched": stats.assetsFetched, "fetchesFailed": stats.assetFetchesFailed,
                                "chunksReceived": stats.assetChunksReceived,
                                "chunksSent": stats.assetChunksSent, "receiveRate": caps.assetReceiveRate,
                                "sendRate": caps.assetSendRate,
                                "pauses": traffic.assetPauses, "pausedSeconds": traffic.assetPausedTime.inSeconds,
                                "bytes": stored.chunks, "segmentBytes": stored.segments
                            ] as [String: Any],
                            "purged": ["tombstones": stats.tombstonesPurged, "zones": stats.zoneTombstonesPurged],
                            "garbageCollected": [
                                "runs": gc.runs, "manifests": gc.manifestsRemoved, "chunks": gc.chunksRemoved,
                                "bytes": gc.bytesRemoved,
                                "segmentsCompacted": gc.segmentsCompacted, "segmentBytesFreed": gc.segmentBytesFreed
                            ],
                            "peerCounters": Dictionary(
                                uniqueKeysWithValues: perPeer.map {
                                    (
                                        $0.key.hex,
                                        [
                                            "recordsReceived": $0.value.recordsReceived,
                                            "bytesReceived": $0.value.bytesReceived,
                                            "recordsSent": $0.value.recordsSent, "bytesSent": $0.value.bytesSent
                                        ]
                                    )
                                }),
                            "discovery": discovery.map(Self.discoveryJSON) ?? NSNull(),
                            "replication": links.map {
                                [
                                    "peer": $0.peer.hex, "zone": $0.zone.description, "receiving": $0.receiving,
                                    "receivedCaughtUp": $0.receivedCaughtUp,
                                    "recordsReceived": $0.recordsReceived, "sending": $0.sending,
                                    "unacknowledgedBatches": $0.unacknowledgedBatches,
                                    "sentCaughtUp": $0.sentCaughtUp
                                ] as [String: Any]
                            }
                        ]))
                    return
                }
                Console.current.line("node \(node.nodeID.hex), \(connections) connection\(connections == 1 ? "" : "s")")
                if !peers.isEmpty {
                    for l in RecordFormatting.table(
                        ["PEER", "STATE", "NODE", "LAST ERROR"],
                        peers.map {
                            [
                                $0.address, $0.isConnected ? "connected" : "retrying (\($0.failures) failures)",
                                $0.node?.short ?? "-", $0.lastError ?? ""
                            ]
                        })
                    { Console.current.line(l) }
                }
                if !devices.isEmpty {
                    for l in RecordFormatting.table(
                        ["DEVICE", "NAME", "STATE", "LAST SEEN", "FOUND AT"],
                        devices.map {
                            [
                                $0.device.device.short, $0.device.name, $0.isConnected ? "connected" : "-",
                                $0.lastSeenText(), $0.foundText
                            ]
                        })
                    { Console.current.line(l) }
                }
                for l in RecordFormatting.table(
                    ["ZONE", "RECORDS", "TOMBSTONES", "PURGED UP TO", "KEPT FOR (TOMBSTONES)", "DIGEST"], zoneRows)
                { Console.current.line(l) }
                if !deletedZones.isEmpty || purgedZones > 0 {
                    // Per deleted zone, the peers that have not announced it deleted (a purge waits for them).
                    let waiting = deletedZones.map { z in
                        var who = z.waitingFor.map(\.short)
                        if z.peersMissing > 0 {
                            who.append("\(z.peersMissing) device\(z.peersMissing == 1 ? "" : "s") not heard from")
                        }
                        return "\(z.zone) (\(who.isEmpty ? "no one" : who.joined(separator: ", ")))"
                    }
                    Console.current.line(
                        "deleted zones kept: \(deletedZones.count)\(waiting.isEmpty ? "" : " (waiting for: \(waiting.joined(separator: "; ")))"); purged zones remembered: \(purgedZones)"
                    )
                }
                for l in Self.discoveryText(discovery) { Console.current.line(l) }
                if !links.isEmpty {
                    for l in RecordFormatting.table(
                        ["PEER", "ZONE", "FROM PEER", "TO PEER"],
                        links.map {
                            [$0.peer.short, $0.zone.description, inbound($0), outbound($0)]
                        })
                    { Console.current.line(l) }
                }
                Console.current.line(
                    "received \(stats.recordsReceived) records in \(stats.batchesReceived) batches; sent \(stats.recordsSent) in \(stats.batchesSent)"
                )
                if !perPeer.isEmpty {
                    // Per peer, over every connection since the daemon started (SyncNode.peerStatistics).
                    for l in RecordFormatting.table(
                        ["PEER", "RECORDS IN", "BYTES IN", "RECORDS OUT", "BYTES OUT"],
                        perPeer.map {
                            [
                                $0.key.short, String($0.value.recordsReceived), String($0.value.bytesReceived),
                                String($0.value.recordsSent), String($0.value.bytesSent)
                            ]
                        })
                    { Console.current.line(l) }
                }
                // Edits of large fields sent as the edit (Spec/replication.md §3.5.1, "Delta slots").
                if stats.fieldDeltasSent + stats.fieldDeltasApplied + stats.recordsWantedWhole + stats.recordsSentWhole
                    > 0
                {
                    Console.current.line(
                        "field deltas: \(stats.fieldDeltasSent) sent (\(stats.fieldDeltaBytesSaved) bytes saved), \(stats.fieldDeltasApplied) applied;"
                            + " records asked for whole: \(stats.recordsWantedWhole), sent whole when asked: \(stats.recordsSentWhole)"
                    )
                }
                var assets =
                    "assets: \(stats.assetsFetched) fetched (\(stats.assetFetchesFailed) failed), \(stats.assetChunksReceived) chunks received, \(stats.assetChunksSent) sent"
                if caps.assetReceiveRate > 0 || caps.assetSendRate > 0 {
                    func cap(_ rate: Int) -> String {
                        rate > 0 ? String(format: "%.1f MB/s", Double(rate) / 1e6) : "unlimited"
                    }
                    assets +=
                        "; receive cap \(cap(caps.assetReceiveRate)), send cap \(cap(caps.assetSendRate)),"
                        + " paused \(traffic.assetPauses) times (\(String(format: "%.1f", traffic.assetPausedTime.inSeconds)) s)"
                }
                Console.current.line(assets)
                Console.current.line(
                    "asset store: \(stored.chunks) bytes of chunks in \(stored.segments) bytes of segment files")
                if gc.runs > 0 || stats.tombstonesPurged + stats.zoneTombstonesPurged > 0 {
                    Console.current.line(
                        "collected: \(stats.tombstonesPurged) tombstones and \(stats.zoneTombstonesPurged) deleted zones purged; "
                            + "asset collections: \(gc.runs), which removed \(gc.manifestsRemoved) manifests and \(gc.chunksRemoved) chunks (\(gc.bytesRemoved) bytes) and "
                            + "compacted \(gc.segmentsCompacted) segments (\(gc.segmentBytesFreed) bytes freed)")
                }
                let refused =
                    stats.refusedForPermission + stats.refusedBatches + stats.refusedKnowledge + stats.sharesIgnored
                    + stats.unsignedZoneChangesIgnored
                if refused > 0 {
                    Console.current.line(
                        "refused from peers: \(stats.refusedForPermission) for permission (not a member, or read-only), \(stats.refusedBatches) batches and \(stats.refusedKnowledge) knowledge claims (Spec/replication.md §3.8), \(stats.sharesIgnored) shares not signed by a zone's owner, \(stats.unsignedZoneChangesIgnored) unsigned changes to shared zones"
                    )
                }
                for (peer, e) in errors { Console.current.line("last error with \(peer.short): \(e)") }
            }
        }
    }
}

extension StatusCommand {
    /// Local discovery for `--json`: per interface its addresses, the groups joined, the
    /// broadcast addresses, when an announcement last left and arrived there (ISO 8601, with
    /// milliseconds) and the last error; then what keeps discovery from running fully.
    static func discoveryJSON(_ d: DiscoveryStatus) -> [String: Any] {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return [
            "interfaces": d.interfaces.map { i -> [String: Any] in
                [
                    "name": i.name, "addresses": i.addresses, "joined": i.joined, "broadcast": i.broadcast,
                    "lastSent": i.lastSent.map(f.string(from:)) ?? NSNull(),
                    "lastHeard": i.lastHeard.map(f.string(from:)) ?? NSNull(),
                    "lastError": i.lastError ?? NSNull()
                ]
            },
            "problems": d.problems, "sent": d.sent, "refused": d.refused
        ]
    }

    /// Local discovery as text: a line when it does not run or has no interface, else one row
    /// per interface.
    static func discoveryText(_ d: DiscoveryStatus?, now: Date = Date()) -> [String] {
        guard let d else { return ["local discovery: not running (off, or listening on loopback only)"] }
        let lines = d.problems.map { "local discovery: \($0)" }
        guard !d.interfaces.isEmpty else {
            return ["local discovery: waiting for a network interface (none is up with an address)"] + lines
        }
        func ago(_ date: Date?) -> String {
            date.map { String(format: "%.1f s ago", now.timeIntervalSince($0)) } ?? "-"
        }
        return RecordFormatting.table(
            ["DISCOVERY ON", "ADDRESSES", "JOINED", "LAST SENT", "LAST HEARD", "LAST ERROR"],
            d.interfaces.map { i in
                let joined = i.joined + i.broadcast.map { "broadcast \($0)" }
                return [
                    i.name, i.addresses.joined(separator: ","), joined.isEmpty ? "-" : joined.joined(separator: ","),
                    ago(i.lastSent), ago(i.lastHeard), i.lastError ?? ""
                ]
            }) + lines
    }
}

struct DigestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest", abstract: "Print a stable hash of a zone's live records, to compare nodes.")
    @OptionGroup var options: NodeOptions
    @Argument(help: "The zone: name or name@owner.") var zone: String

    func run() async throws {
        try await reportFailures {
            try await options.withNode { node in
                let d = try await node.digest(of: parseZone(zone))
                Console.current.line(
                    options.json
                        ? RecordFormatting.jsonText(["zone": zone, "digest": d.description, "records": d.recordCount])
                        : "\(d) \(d.recordCount) records")
            }
        }
    }
}
