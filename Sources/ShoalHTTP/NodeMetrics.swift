// NodeMetrics: the node's counters in Prometheus text format, through swift-metrics and swift-prometheus.

import CoreMetrics
import Foundation
package import Hummingbird
import Prometheus
package import Shoal

/// The node's metrics, read from the same counters `shoal status` shows (`SyncNode.Statistics`
/// and its per-peer share, the traffic counter, the connection count, the garbage collections'
/// totals, the asset store's bytes), so the two never disagree.
///
/// Counters follow those totals: each scrape adds what grew since the last one. Gauges are set
/// at each scrape. The change latency histogram is fed by ``observeLatency(of:node:)``: for
/// records that arrived from another node, the time from their last write on that node (its
/// hybrid logical clock) to their commit here, sampled (at most 16 records per zone and store
/// notification).
/// The registry is this node's own: nothing is bootstrapped globally.
package actor NodeMetrics {
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private var counters: [String: CoreMetrics.Counter] = [:]
    private var last: [String: Int] = [:]
    private let latency: CoreMetrics.Timer
    private let dataDirectory: String?
    /// The most records a notification's latency is sampled from.
    static let latencySample = 16

    /// Metrics for a node whose data directory is `dataDirectory` (its size is a gauge).
    package init(dataDirectory: String?) {
        var f = PrometheusMetricsFactory(registry: registry)
        f.durationHistogramBuckets["shoal_change_latency_seconds"] = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
            .seconds(30), .seconds(60)
        ]
        factory = f
        latency = CoreMetrics.Timer(label: "shoal_change_latency_seconds", dimensions: [], factory: f)
        self.dataDirectory = dataDirectory
    }

    /// Records how long the changes a store notification announces took to arrive, for those
    /// written on another node: the first ``latencySample`` changes of each zone since the
    /// notification's token.
    package func observeLatency(of n: StoreNotification, node: ShoalNode) async {
        let now = Timestamp.now()
        for zone in n.zones {
            guard let since = n.since[zone],
                let changes = try? await node.changes(in: zone, since: since, limit: Self.latencySample)
            else { continue }
            for r in changes.records {
                guard let by = r.modifiedBy, by != node.nodeID, let at = r.modificationDate else { continue }
                latency.recordNanoseconds(max(0, now.millisecondsSince1970 - at.millisecondsSince1970) * 1_000_000)
            }
        }
    }

    /// Moves the counter `name` (with `labels`) up to `total`.
    private func follow(_ name: String, _ labels: [(String, String)] = [], to total: Int) {
        let key = name + labels.map { "|\($0.0)=\($0.1)" }.joined()
        let counter = counters[key] ?? CoreMetrics.Counter(label: name, dimensions: labels, factory: factory)
        counters[key] = counter
        let grown = total - (last[key] ?? 0)
        if grown > 0 { counter.increment(by: grown) }
        last[key] = max(total, last[key] ?? 0)
    }

    /// Sets the gauge `name` (with `labels`).
    private func gauge(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        CoreMetrics.Gauge(label: name, dimensions: labels, factory: factory).record(value)
    }

    /// Reads the node's counters into the registry and returns the Prometheus text.
    package func scrape(node: ShoalNode) async -> [UInt8] {
        let s = await node.sync.statistics
        let traffic = await node.traffic()
        follow("shoal_records_received_total", to: s.recordsReceived)
        follow("shoal_records_sent_total", to: s.recordsSent)
        follow("shoal_batches_received_total", to: s.batchesReceived)
        follow("shoal_batches_sent_total", to: s.batchesSent)
        follow("shoal_record_bytes_received_total", to: s.bytesReceived)
        follow("shoal_network_bytes_received_total", to: traffic.bytesReceived)
        follow("shoal_network_bytes_sent_total", to: traffic.bytesSent)
        for (reason, n) in [
            ("permission", s.refusedForPermission), ("batch", s.refusedBatches), ("knowledge", s.refusedKnowledge),
            ("share", s.sharesIgnored), ("unsignedZoneChange", s.unsignedZoneChangesIgnored)
        ] {
            follow("shoal_refused_total", [("reason", reason)], to: n)
        }
        follow("shoal_tombstones_purged_total", to: s.tombstonesPurged)
        follow("shoal_zones_purged_total", to: s.zoneTombstonesPurged)
        follow("shoal_assets_fetched_total", to: s.assetsFetched)
        follow("shoal_asset_fetches_failed_total", to: s.assetFetchesFailed)
        follow("shoal_asset_chunks_received_total", to: s.assetChunksReceived)
        follow("shoal_asset_chunks_sent_total", to: s.assetChunksSent)
        let gc = await node.garbageCollected
        follow("shoal_asset_gc_runs_total", to: gc.runs)
        follow("shoal_asset_manifests_collected_total", to: gc.manifestsRemoved)
        follow("shoal_asset_chunks_collected_total", to: gc.chunksRemoved)
        follow("shoal_asset_bytes_collected_total", to: Int(gc.bytesRemoved))
        follow("shoal_asset_segments_compacted_total", to: gc.segmentsCompacted)
        follow("shoal_asset_segment_bytes_freed_total", to: Int(gc.segmentBytesFreed))
        let stored = node.assets.storedBytes
        gauge("shoal_asset_bytes", [], Double(stored.chunks))
        gauge("shoal_asset_segment_bytes", [], Double(stored.segments))
        gauge("shoal_connections", [], Double(await node.connectionCount()))
        gauge("shoal_trusted_devices", [], Double(await node.trustedDevices().count))
        gauge("shoal_pending_devices", [], Double(await node.pendingDevices().count))
        gauge("shoal_zones", [], Double(await node.zones().count))
        for (peer, p) in await node.sync.peerStatistics {
            let labels = [("peer", peer.hex)]
            follow("shoal_peer_records_received_total", labels, to: p.recordsReceived)
            follow("shoal_peer_bytes_received_total", labels, to: p.bytesReceived)
            follow("shoal_peer_records_sent_total", labels, to: p.recordsSent)
            follow("shoal_peer_bytes_sent_total", labels, to: p.bytesSent)
        }
        for link in await node.sync.replication() {
            let labels = [("peer", link.peer.hex), ("zone", link.zone.description)]
            gauge("shoal_peer_records_received", labels, Double(link.recordsReceived))
            gauge("shoal_peer_unacknowledged_batches", labels, Double(link.unacknowledgedBatches))
        }
        if let dir = dataDirectory { gauge("shoal_store_bytes", [], Double(Self.storeBytes(dir))) }
        return registry.emitToBuffer()
    }

    /// The bytes of the store's files (database, write-ahead log) in `directory`.
    static func storeBytes(_ directory: String) -> Int {
        ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm"].reduce(0) { sum, name in
            let size =
                (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size] as? NSNumber)?
                .intValue ?? 0
            return sum + size
        }
    }

    /// `GET /metrics`.
    package func exposition(node: ShoalNode) async -> Response {
        APIResponse.bytes(await scrape(node: node), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }
}
