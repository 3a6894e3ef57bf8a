// NodeAPI+Status: the node's state and counters, as `shoal status --json` shows them.

import Foundation
import Hummingbird
import Shoal

extension NodeAPI {
    /// `GET /api/v1/status`: as `shoal status --json` — the node, its peers, zones (records,
    /// tombstones, digest), replication per peer and zone, the last error per peer, and the
    /// counters (`received`, `sent`, `refused`, `assets`, `purged`, `garbageCollected`,
    /// `peerCounters`) that `/metrics` exports too.
    func status() async throws -> Response {
        let peers = await node.peers()
        let stats = await node.sync.statistics
        let errors = await node.sync.lastErrors()
        let links = await node.sync.replication()
        let perPeer = await node.sync.peerStatistics
        let gc = await node.garbageCollected
        let stored = node.assets.storedBytes
        var zones = [[String: Any]]()
        for z in await node.zones() {
            let t = try await node.tombstoneState(of: z.id)
            let d = try await node.digest(of: z.id)
            zones.append([
                "zone": z.id.description, "records": t.liveRecords, "tombstones": t.tombstones,
                "digest": String(d.description.prefix(16))
            ])
        }
        return APIResponse.json(
            [
                "node": node.nodeID.hex, "device": node.deviceID.text, "connections": await node.connectionCount(),
                "peers": peers.map {
                    [
                        "address": $0.address, "connected": $0.isConnected, "node": $0.node?.hex ?? NSNull(),
                        "failures": $0.failures,
                        "lastError": $0.lastError ?? NSNull()
                    ] as [String: Any]
                },
                "zones": zones,
                "received": [
                    "records": stats.recordsReceived, "batches": stats.batchesReceived, "bytes": stats.bytesReceived
                ],
                "sent": ["records": stats.recordsSent, "batches": stats.batchesSent],
                "refused": [
                    "permission": stats.refusedForPermission, "batches": stats.refusedBatches,
                    "knowledge": stats.refusedKnowledge,
                    "sharesIgnored": stats.sharesIgnored, "unsignedZoneChanges": stats.unsignedZoneChangesIgnored
                ],
                "purged": ["tombstones": stats.tombstonesPurged, "zones": stats.zoneTombstonesPurged],
                "assets": [
                    "fetched": stats.assetsFetched, "fetchesFailed": stats.assetFetchesFailed,
                    "chunksReceived": stats.assetChunksReceived,
                    "chunksSent": stats.assetChunksSent, "bytes": stored.chunks, "segmentBytes": stored.segments
                ],
                "garbageCollected": [
                    "runs": gc.runs, "manifests": gc.manifestsRemoved, "chunks": gc.chunksRemoved,
                    "bytes": gc.bytesRemoved,
                    "segmentsCompacted": gc.segmentsCompacted, "segmentBytesFreed": gc.segmentBytesFreed
                ],
                "peerCounters": Dictionary(
                    perPeer.map {
                        (
                            $0.key.hex,
                            [
                                "recordsReceived": $0.value.recordsReceived, "bytesReceived": $0.value.bytesReceived,
                                "recordsSent": $0.value.recordsSent, "bytesSent": $0.value.bytesSent
                            ]
                        )
                    },
                    uniquingKeysWith: { a, _ in a }),
                "errors": Dictionary(errors.map { ($0.key.hex, $0.value) }, uniquingKeysWith: { a, _ in a }),
                "replication": links.map {
                    [
                        "peer": $0.peer.hex, "zone": $0.zone.description, "receiving": $0.receiving,
                        "receivedCaughtUp": $0.receivedCaughtUp,
                        "recordsReceived": $0.recordsReceived, "recordsExpected": $0.recordsExpected ?? NSNull(),
                        "sending": $0.sending,
                        "unacknowledgedBatches": $0.unacknowledgedBatches, "sentCaughtUp": $0.sentCaughtUp
                    ] as [String: Any]
                }
            ] as [String: Any])
    }
}
