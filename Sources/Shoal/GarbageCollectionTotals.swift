// GarbageCollectionTotals: what every asset garbage collection of a node removed since it opened,
// for `shoal status` and the daemon's metrics.

package import ShoalAssets

/// The sums of the ``GarbageCollectionReport``s of a node's collections since it opened (dry runs
/// left out): `shoal gc`, the daemon's `--asset-gc-interval` rounds and library calls alike.
package struct GarbageCollectionTotals: Sendable, Hashable {
    /// Collections run.
    package var runs = 0
    /// Asset manifests removed (damaged ones included).
    package var manifestsRemoved = 0
    /// Asset chunks removed.
    package var chunksRemoved = 0
    /// Bytes of the manifests, chunk records and legacy chunk files removed.
    package var bytesRemoved: Int64 = 0
    /// Segment files rewritten or removed to reclaim the space of removed chunks.
    package var segmentsCompacted = 0
    /// Bytes those compactions gave back to the file system.
    package var segmentBytesFreed: Int64 = 0

    /// Adds one collection's report.
    package mutating func add(_ r: GarbageCollectionReport) {
        runs += 1
        manifestsRemoved += r.manifestsRemoved + r.damagedManifestsRemoved
        chunksRemoved += r.chunksRemoved
        bytesRemoved += r.bytesRemoved
        segmentsCompacted += r.segmentsCompacted
        segmentBytesFreed += r.segmentBytesFreed
    }
}
