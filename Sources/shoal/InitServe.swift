// InitServe: `shoal init` creates a node's data directory; `shoal serve` runs the node daemon.

import ArgumentParser
import Dispatch
import Foundation
import Shoal
import ShoalHTTP
import Logging
#if canImport(Glibc)
    import Glibc
#endif

struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init", abstract: "Create a data directory with a new node identity and device ID.")
    @OptionGroup var options: NodeOptions

    func run() async throws {
        try await reportFailures {
            let dir = options.directory
            if dir.exists {
                throw CommandFailure(
                    .dataDirectory,
                    "\(dir.path) already holds a Shoal node; each data directory is one node identity (use another --data)"
                )
            }
            try dir.create()
            let node = try await ShoalNode.open(directory: dir.path)
            do { _ = try APIKey.loadOrCreate(in: dir.path) } catch { throw CommandFailure(.dataDirectory, "\(error)") }
            Console.current.line(
                options.json
                    ? RecordFormatting.jsonText([
                        "node": node.nodeID.hex, "device": node.deviceID.text, "data": dir.path
                    ])
                    : "created node \(node.nodeID.hex) in \(dir.path)\ndevice ID \(node.deviceID)")
        }
    }
}

/// A `host:port` option.
struct Endpoint: ExpressibleByArgument, Sendable {
    let host: String
    let port: Int
    init?(argument: String) {
        guard let colon = argument.lastIndex(of: ":"), let port = Int(argument[argument.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        host = String(argument[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        self.port = port
    }
    var description: String { "\(host):\(port)" }
}

/// A bytes-per-second option: a count with an optional unit, `k`/`M`/`G` (SI) or `KiB`/`MiB`/`GiB`,
/// `B` and a trailing `/s` optional (`50MB`, `50M/s`, `1.5GiB`); 0 is unlimited.
struct ByteRate: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let bytesPerSecond: Int

    init(bytesPerSecond: Int) { self.bytesPerSecond = bytesPerSecond }

    init?(argument: String) {
        var text = argument.trimmingCharacters(in: .whitespaces)
        if text.hasSuffix("/s") { text.removeLast(2) }
        let units: [(String, Double)] = [
            ("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824), ("kB", 1e3), ("KB", 1e3), ("MB", 1e6),
            ("GB", 1e9),
            ("k", 1e3), ("K", 1e3), ("M", 1e6), ("G", 1e9), ("B", 1)
        ]
        var scale = 1.0
        if let (unit, factor) = units.first(where: { text.hasSuffix($0.0) }) {
            text.removeLast(unit.count)
            scale = factor
        }
        guard let count = Double(text), count.isFinite, count >= 0, count * scale < 1e15 else { return nil }
        bytesPerSecond = Int(count * scale)
    }

    var description: String { "\(bytesPerSecond) B/s" }
    var defaultValueDescription: String { bytesPerSecond == 0 ? "unlimited" : description }
}

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the node: accept peers, dial peers, replicate, answer other shoal commands.")
    @OptionGroup var options: NodeOptions
    @Option(name: .long, help: "Where to accept peers (HOST:PORT). Default 127.0.0.1:7400.") var listen = Endpoint(
        argument: "127.0.0.1:7400")!
    @Option(
        name: .long,
        help:
            "A peer to dial (HOST:PORT); repeat for several. Its device must be trusted (shoal peer add), as must every device that connects."
    )
    var peer: [Endpoint] = []
    @Option(name: .long, help: "Log format: text (default) or json.") var logFormat = "text"
    @Option(name: .long, help: "Log level: trace, debug, info (default), notice, warning, error.") var logLevel = "info"
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Most asset bytes per second received from all peers together, e.g. 50MB or 400KiB; 0 is unlimited. Record changes are never held back.",
            valueName: "rate"))
    var assetReceiveRate = ByteRate(bytesPerSecond: 0)
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Most asset bytes per second served to all peers together, as --asset-receive-rate; 0 is unlimited.",
            valueName: "rate"))
    var assetSendRate = ByteRate(bytesPerSecond: 0)
    @Option(
        name: .long,
        help: ArgumentHelp(
            "How often to remove asset files no record references (s, m, h or d; 0 never). `shoal gc` does it at once.",
            valueName: "interval"))
    var assetGcInterval = Interval(seconds: 6 * 3600)
    @Option(
        name: .long,
        help: ArgumentHelp(
            "How often to purge tombstones every known peer has acknowledged, and deleted zones every peer has announced deleted, or either older than --tombstone-retention (s, m, h or d; 0 never). Default 1h.",
            valueName: "interval"))
    var purgeInterval = Interval(seconds: 3600)
    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long a deletion (of a record or a zone) waits for known peers that have not acknowledged it before a purge removes it anyway (s, m, h or d; 0 waits for all). Default 30d.",
            valueName: "interval"))
    var tombstoneRetention = Interval(seconds: 30 * 86_400)
    @Flag(
        name: .long,
        help:
            "Do not announce this node on the LAN, nor dial trusted devices heard there (local discovery is on by default; Spec/discovery.md)."
    )
    var noDiscovery = false
    @Option(
        name: .long,
        help: ArgumentHelp("Seconds between two discovery announcements (default 30).", valueName: "seconds"))
    var discoveryInterval = 30.0
    @Option(name: .long, help: ArgumentHelp("The UDP port of local discovery (default 21047).", valueName: "port"))
    var discoveryPort = 21_047
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds between two reads of the network interfaces by local discovery, which joins the interfaces that came up and announces on them at once (default 5; on Linux a change is also noticed at once).",
            valueName: "seconds"))
    var discoveryRescan = 5.0
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds without a frame from a peer before its connection is taken for dead and closed, and the peer redialled (default 45; 3–3600). A ping goes out after a third of it without sending, and a live peer answers it, so only a peer that vanished, or a link that died, stays silent that long.",
            valueName: "seconds"))
    var idleTimeout = 45.0
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where to serve the HTTP API, the metrics and the web console (HOST:PORT; port 0 lets the system choose, and the log says which). Beyond loopback it needs --http-tls-cert and --http-tls-key (HTTPS), or --http-allow-plaintext. The key: `shoal http-key`.",
            valueName: "host:port"))
    var http = Endpoint(argument: "127.0.0.1:8384")!
    @Flag(name: .long, help: "Serve no HTTP API, metrics or console.")
    var noHttp = false
    @Flag(
        name: .long,
        help:
            "Let --http bind an address beyond loopback without TLS: the API key and the records it serves then cross the network in clear (use only behind a TLS proxy or on a trusted link)."
    )
    var httpAllowPlaintext = false
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve the HTTP API and console over HTTPS with this certificate (PEM: the server's certificate, then any intermediate ones); with --http-tls-key. An address beyond loopback then needs no --http-allow-plaintext.",
            valueName: "path"))
    var httpTlsCert: String?
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The private key of --http-tls-cert (PEM, unencrypted; keep it mode 0600).", valueName: "path"))
    var httpTlsKey: String?
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Merge concurrent edits of this string field three-way, so edits of different lines (or words) made on two nodes both survive; overlapping edits keep the later writer's. TYPE.FIELD, e.g. Note.body; repeat for several. Applies to every zone this node holds or gains; run every node with the same fields.",
            valueName: "type.field"))
    var mergeText: [String] = []

    func validate() throws {
        if (httpTlsCert == nil) != (httpTlsKey == nil) {
            throw ValidationError(
                "--http-tls-cert and --http-tls-key go together: give the certificate and its private key (PEM files)")
        }
        if noHttp, httpTlsCert != nil {
            throw ValidationError(
                "--http-tls-cert and --http-tls-key set up the HTTP API, which --no-http turns off; leave one out")
        }
        if let bad = mergeText.first(where: { !TextMerge.isFieldName($0) }) {
            throw ValidationError(
                "--merge-text takes TYPE.FIELD, a record type and a field name joined by a dot (Note.body), not \(bad)")
        }
    }

    func run() async throws {
        try await reportFailures {
            let dir = options.directory
            guard ["text", "json"].contains(logFormat) else {
                throw CommandFailure(.usage, "--log-format must be text or json, not \(logFormat)")
            }
            guard let level = Logger.Level(rawValue: logLevel) else {
                throw CommandFailure(
                    .usage,
                    "--log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not \(logLevel)"
                )
            }
            let log = ConsoleLogHandler.logger(json: logFormat == "json", level: level)
            if !dir.exists {
                try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
            }
            // A short command (put, get…) may hold the directory for a moment: wait for it, up to
            // 10 s. Another daemon (its control socket answers) is refused at once.
            var lock: Int32? = nil
            let deadline = ContinuousClock.now + .seconds(10)
            while lock == nil {
                lock = dir.lockForDaemon()
                if lock != nil { break }
                if ControlClient.answers(dir) || ContinuousClock.now > deadline {
                    throw CommandFailure(
                        .dataDirectory,
                        "another shoal process holds \(dir.path); only one daemon may serve a data directory")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            guard let lock else { return }
            defer { close(lock) }
            var sc = SyncConfiguration()
            sc.nodeName = ProcessInfo.processInfo.hostName
            sc.logger = log
            var nc = NetworkConfiguration()
            nc.logger = log
            nc.assetReceiveRate = assetReceiveRate.bytesPerSecond
            nc.assetSendRate = assetSendRate.bytesPerSecond
            nc.tombstonePurgeInterval = purgeInterval.seconds > 0 ? .seconds(purgeInterval.seconds) : nil
            nc.tombstoneRetention = tombstoneRetention.seconds > 0 ? .seconds(tombstoneRetention.seconds) : nil
            guard discoveryInterval >= 1, discoveryInterval <= 86_400, discoveryRescan >= 1, discoveryRescan <= 86_400,
                (1...65535).contains(discoveryPort)
            else {
                throw CommandFailure(
                    .usage,
                    "--discovery-interval and --discovery-rescan must be 1–86400 seconds and --discovery-port 1–65535")
            }
            guard idleTimeout >= 3, idleTimeout <= 3600 else {
                throw CommandFailure(.usage, "--idle-timeout must be 3–3600 seconds, not \(idleTimeout)")
            }
            nc.idleTimeout = .milliseconds(Int(idleTimeout * 1_000))
            nc.pingInterval = .milliseconds(Int(idleTimeout * 1_000 / 3))
            nc.discovery.isEnabled = !noDiscovery
            nc.discovery.interval = .milliseconds(Int(discoveryInterval * 1_000))
            nc.discovery.port = discoveryPort
            nc.discovery.interfaceCheckInterval = .milliseconds(Int(discoveryRescan * 1_000))
            let node = try await ShoalNode.open(directory: dir.path, sync: sc, network: nc)
            // Before listening: a conflict met before the resolver is set would be decided without it.
            if !mergeText.isEmpty { await node.setDefaultConflictResolver(.mergingText(fields: Set(mergeText))) }
            let port = try await node.listen(host: listen.host, port: listen.port)
            // The control socket first: whoever reads the line below (a script, a test) may send
            // commands at once, and they must reach this daemon, not find the store locked.
            let control = try await ControlServer.start(at: dir.socketPath, node: node)
            let httpServer = noHttp ? nil : try await startHTTP(node, directory: dir, log: log)
            let trusted = await node.trustedDevices().count
            var metadata: Logger.Metadata = [
                "listen": "\(listen.host):\(port)", "node": "\(node.nodeID.hex)", "device": "\(node.deviceID)",
                "trusted": "\(trusted)"
            ]
            if let httpServer { metadata["http"] = "\(http.host):\(httpServer.port)" }
            log.info("node \(node.nodeID.short) serving \(dir.path)", metadata: metadata)
            for p in peer {
                await node.connect(to: p.host, port: p.port)
                log.info("replicating with \(p.description)")
            }
            let controlTask = Task { await ControlServer.serve(control, node: node) }

            // Stop cleanly on SIGINT / SIGTERM: goodbye to peers; every acknowledged save is
            // already durable (each commit is synchronous).
            let (stops, stop) = AsyncStream<Int32>.makeStream()
            var sources = [any DispatchSourceSignal]()
            for sig in [SIGINT, SIGTERM] {
                signal(sig, SIG_IGN)
                let s = DispatchSource.makeSignalSource(signal: sig, queue: .main)
                s.setEventHandler { stop.yield(sig) }
                s.resume()
                sources.append(s)
            }
            let progress = Task {
                await Self.report(node, log: log, tty: isatty(STDOUT_FILENO) != 0 && logFormat != "json")
            }
            let collector = Task { [assetGcInterval] in
                await Self.collectGarbage(node, every: assetGcInterval, log: log)
            }
            let conflicts = await node.conflicts()
            let conflictLog = Task { for await e in conflicts { Self.logConflict(e, log: log) } }
            var iterator = stops.makeAsyncIterator()
            let sig = await iterator.next() ?? SIGTERM
            log.info("stopping on signal \(sig)")
            progress.cancel()
            collector.cancel()
            conflictLog.cancel()
            await httpServer?.stop()
            await node.shutdown()
            try? await control.channel.close()
            controlTask.cancel()
            unlink(dir.socketPath)
            log.info("stopped")
            _ = sources
        }
    }

    /// Starts the HTTP API on `--http`, with the data directory's key (made now for a directory
    /// from before the API).
    func startHTTP(_ node: ShoalNode, directory dir: DataDirectory, log: Logger) async throws -> HTTPServer {
        let key: APIKey
        do { key = try APIKey.loadOrCreate(in: dir.path) } catch { throw CommandFailure(.dataDirectory, "\(error)") }
        var configuration = HTTPConfiguration(apiKey: key)
        configuration.host = http.host
        configuration.port = http.port
        configuration.allowsPlainTextBeyondLoopback = httpAllowPlaintext
        if let httpTlsCert, let httpTlsKey {
            configuration.tls = TLSFiles(certificatePath: httpTlsCert, privateKeyPath: httpTlsKey)
        }
        do {
            let server = try await HTTPServer.start(
                node: node, configuration: configuration, dataDirectory: dir.path, logger: log)
            if configuration.tls != nil {
                log.info("the HTTP API speaks TLS: https://\(http.host):\(server.port)/")
            } else if !HTTPConfiguration.isLoopback(http.host) {
                log.warning(
                    "the HTTP API listens on \(http.host):\(server.port) without TLS (--http-allow-plaintext): its key and records cross the network in clear"
                )
            }
            return server
        } catch {
            // Beyond loopback without TLS or the flag is a usage error; a port in use or an
            // unreadable certificate is a failure.
            throw CommandFailure(configuration.bindingRefusal == nil ? .failure : .usage, "\(error)")
        }
    }

    /// One line per conflict met: which record and fields, and what became of it. Without
    /// `--merge-text` the daemon sets no resolver, so concurrent edits of a field merge by
    /// last-writer-wins; the line says which value was lost.
    static func logConflict(_ e: ConflictEvent, log: Logger) {
        log.notice("\(conflictLine(e))")
    }

    /// The text of ``logConflict(_:log:)``'s line.
    static func conflictLine(_ e: ConflictEvent) -> String {
        let c = e.conflict
        let outcome: String
        switch e.outcome {
        case .resolved: outcome = "resolved here"
        case .decidedBy(let node): outcome = "decided by node \(node.short)"
        case .merged: outcome = "merged by last-writer-wins"
        case .rejected(let reason): outcome = "the resolver's record was refused: \(reason)"
        }
        let fields = c.fieldNames.map { f in
            guard c.merged[f] != c.local[f] else { return f }
            let local = c.local[f].map { RecordFormatting.text($0).debugDescription } ?? "removal"
            return "\(f) (this node's \(local.prefix(60)) lost)"
        }
        return "conflict in \(c.recordID) on \(fields.joined(separator: ", ")): \(outcome)"
    }

    /// Progress while records arrive: a live line on a terminal, a plain line every 5 s otherwise.
    static func report(_ node: ShoalNode, log: Logger, tty: Bool) async {
        var last = await node.sync.statistics
        var lastTime = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: tty ? .milliseconds(500) : .seconds(5))
            let now = await node.sync.statistics, t = ContinuousClock.now
            guard now != last else { continue }
            let seconds = (t - lastTime).inSeconds
            let rate = Int(Double(now.recordsReceived - last.recordsReceived) / max(seconds, 0.001))
            let mb = Double(now.bytesReceived) / 1_000_000
            var line =
                "received \(now.recordsReceived) records (\(String(format: "%.1f", mb)) MB, \(rate)/s), sent \(now.recordsSent)"
            // During a catch-up the peers said how much was left: a bar and an ETA.
            let catching = await node.sync.replication().filter { $0.recordsExpected != nil }
            let expected = catching.reduce(0) { $0 + ($1.recordsExpected ?? 0) },
                got = catching.reduce(0) { $0 + $1.recordsReceived }
            if expected > 0 {
                let left = max(0, expected - got)
                let eta = rate > 0 ? left / rate : 0
                let done = Double(min(got, expected)) / Double(expected)
                let bar =
                    String(repeating: "#", count: Int(done * 20)) + String(repeating: ".", count: 20 - Int(done * 20))
                line =
                    "[\(bar)] \(got)/\(expected) records, \(String(format: "%.1f", mb)) MB, \(rate)/s, ETA \(eta / 60):\(String(format: "%02d", eta % 60)) — \(line)"
            }
            if tty { Console.current.line("\u{1B}[1A\u{1B}[2K" + line) } else { log.info("\(line)") }
            last = now
            lastTime = t
        }
    }
}
