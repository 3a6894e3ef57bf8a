// NetworkConfiguration: timeouts, keepalive, reconnect backoff and frame options of a node's TCP transport.

public import ShoalWire
public import Logging

/// How a ``NetworkNode`` uses TCP.
public struct NetworkConfiguration: Sendable {
    /// A connection whose peer has not sent a valid hello by then is closed. Default 10 s.
    public var handshakeTimeout: Duration = .seconds(10)
    /// Most connections this node accepts and holds at once (dialled ones are not counted).
    /// Default 256.
    ///
    /// A connection keeps its place for good once TLS has shown a trusted device. At the limit,
    /// a new connection takes the place of one that has not (that one is closed and counted,
    /// ``NetworkNode/evictedConnections``): a connection silent for 250 ms first, then one from
    /// the address holding the most such places, a silent one before one whose handshake has
    /// begun, and the oldest — so strangers holding every place with idle connections cannot
    /// keep a trusted device out (Spec/replication.md §2). Only when every place is held by a
    /// trusted device is one more closed as soon as it is accepted, before TLS, and counted
    /// (``NetworkNode/refusedConnections``).
    public var maxInboundConnections = 256
    /// Most accepted connections from one remote address at once, so one host cannot take every
    /// place of ``maxInboundConnections``; one more from it is closed as soon as it is accepted,
    /// before TLS, and counted (``NetworkNode/refusedConnections``). Default 16.
    public var maxConnectionsPerAddress = 16
    /// A ping is sent after this long without sending anything; the peer answers it with a
    /// pong. Default 15 s. Keep it well below ``idleTimeout`` (a third of it, as the default):
    /// the pongs are what keep a live connection from looking idle.
    public var pingInterval: Duration = .seconds(15)
    /// A connection is closed after this long without receiving anything. Default 45 s.
    ///
    /// This is how a connection that died without a word (the peer asleep or stopped, its link
    /// down, its address removed) is noticed: within this long of its last frame. The socket
    /// closes at once, without waiting for TLS's close_notify a silent peer never sends, so the
    /// device stops counting as connected then (Spec/replication.md §2.1).
    public var idleTimeout: Duration = .seconds(45)
    /// A frame must be received whole within this long of its first byte, or the connection is
    /// closed with an `error` frame (`limitExceeded`). Default 60 s: a frame of the largest
    /// default size (4 MiB) arrives in it at about 0.6 Mbit/s.
    public var frameCompletionTimeout: Duration = .seconds(60)
    /// Most bytes of record and control frames (`changes` batches, acknowledgements, `pong`s …)
    /// one connection may have waiting for its socket before this node stops serving it more.
    /// Default 8 MiB.
    ///
    /// Above it the peer's `subscribe`, `acknowledgement` and `ping` frames wait, in order, until
    /// the peer has read enough: a peer that stops reading stops being served, and what it makes
    /// this node hold stays near this bound — plus the batches of the request handled last (at
    /// most `SyncConfiguration.maxServedWindow` of `batchBytes`) and what its subscriptions'
    /// windows take when their zones change — instead of every batch of every zone it asked for.
    /// Everything else the peer sends is still read, so two nodes sending each other more than
    /// this never wait for each other.
    public var outboxBytes = 8 << 20
    /// Most bytes of one connection's frames (decompressed) this node holds read but not yet
    /// handled; past it the node stops reading that connection until it has caught up, so TCP
    /// slows the peer. Default 8 MiB.
    ///
    /// One task handles every connection's frames in order; a peer sending faster than this node
    /// applies — a flood of `changes` batches that ignores the window, or a burst on a slow disk —
    /// is held to this bound instead of growing the queue, and a frame from another peer waits
    /// behind at most this much from each. A frame larger than the bound (up to
    /// `WireLimits.maxFramePayloadBytes`) still passes when nothing else is held.
    public var inboundBytes = 8 << 20
    /// A connection whose socket takes no more bytes for this long is closed and logged: its peer
    /// reads nothing, or too slowly to empty one frame in that time. Default 60 s: a frame of the
    /// largest default size (4 MiB) leaves in it at about 0.6 Mbit/s, as for
    /// ``frameCompletionTimeout``.
    ///
    /// The clock starts when NIO's buffer for the connection passes its high watermark and stops
    /// whenever it falls below the low one (`OutboundQueue.bufferedBytes`), so a slow peer that
    /// keeps reading is never closed by it.
    public var unwritableTimeout: Duration = .seconds(60)
    /// The first delay before redialling a peer; it doubles up to ``maxReconnectDelay``, with
    /// ±25 % jitter. Default 100 ms.
    public var reconnectDelay: Duration = .milliseconds(100)
    /// The longest delay between redials. Default 30 s.
    public var maxReconnectDelay: Duration = .seconds(30)
    /// How frames are compressed. Default: the built-in records dictionary.
    public var frames = FrameEncoder.Options()
    /// Whether connections compress as one zstd stream per direction (compression 3,
    /// Spec/wire-format.md §14.3): the node announces it in its hellos and uses it towards peers
    /// that announce it too, starting the stream from the dictionary of `frames` when the peer
    /// holds it. False: every frame is compressed on its own (compression 0–2). Default true.
    public var streamCompression = true
    /// Most asset bytes per second this node receives, over all peers together; 0 (the default)
    /// is unlimited.
    ///
    /// The fetching side paces itself: after each chunk it waits, when the rate needs it, before
    /// asking for the next ones, so a peer never sends faster than this for long (a tenth of a
    /// second's bytes may pass at once after an idle spell). Record changes are not counted and
    /// never wait. Set it to leave room on a shared network, or, on a host that stalls under heavy
    /// synced writes, to keep record changes quick while a large asset arrives.
    public var assetReceiveRate = 0
    /// Most asset bytes per second this node serves to peers, over all of them together; 0 (the
    /// default) is unlimited. Paced as ``assetReceiveRate`` is, by waiting before answering the
    /// next request; record changes are not counted and never wait.
    public var assetSendRate = 0
    /// Most asset bytes one connection may have waiting for this node's asset lanes (each lane
    /// apart: requests to serve, chunks to store); a frame counts at least 1 KiB. Default 32 MiB.
    ///
    /// Above it the node stops reading that connection until its lane has caught up, so TCP slows
    /// the peer down. A well-behaved peer stays far below it (this node's `assetWindow` bounds the
    /// chunks it sends; its own window the requests); one that floods requests, or chunks nobody
    /// asked for, is held to it instead of growing this node's memory. Values below 1 KiB count as
    /// 1 KiB.
    public var assetQueueBytes = 32 << 20
    /// How often tombstones are purged (``SyncNode/purgeTombstones(retention:)``): those every
    /// known peer of their zone has acknowledged, or older than ``tombstoneRetention``, among those
    /// this node's knowledge covers; and zone tombstones (deleted zones) every peer replicating
    /// the zone has announced deleted, or older than ``tombstoneRetention`` (Spec/replication.md
    /// §4.1). Default: every hour; nil never purges (tombstones then stay forever).
    ///
    /// Replicas converge with purging on, whoever leaves, comes back late or joins after a purge:
    /// Spec/replication.md §3.5.3 gives the rules and the argument.
    public var tombstonePurgeInterval: Duration? = .seconds(3600)
    /// How long a deletion waits for known peers that have not acknowledged it before a purge
    /// removes its tombstone anyway; nil waits for all of them (a peer that never comes back then
    /// holds its zone's tombstones forever). Default: 30 days. A peer away longer resyncs in full
    /// when it returns (Spec/replication.md §3.5.2–3.5.3). Deleted zones wait as long; a purged
    /// zone's incarnation is remembered twelve times as long, so a peer that comes back with the
    /// zone is told it was deleted (§4.1).
    public var tombstoneRetention: Duration? = .seconds(30 * 86_400)
    /// Local discovery: announcing this device on the LAN and dialling the trusted devices heard
    /// there (``DiscoveryConfiguration``). Default: off.
    public var discovery = DiscoveryConfiguration()
    /// Where connection events go (swift-log): connections opened and identified, closed with
    /// the error that closed them, failed dials with the next retry delay. Default: discarded.
    public var logger = Logger(label: "shoal.net", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The defaults.
    public init() {}
}
