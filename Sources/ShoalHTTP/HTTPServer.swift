// HTTPServer: runs the node's HTTP API on Hummingbird until stopped.

import Foundation
import Hummingbird
import HummingbirdCore
package import Logging
import NIOCore
package import Shoal

/// The node's HTTP server: the API, the metrics and the console on one port.
///
/// ``start(node:configuration:dataDirectory:logger:)`` returns once the port is bound (or
/// throws why it could not be); ``stop()`` closes it and ends its listeners.
package final class HTTPServer: Sendable {
    /// The port bound (the one asked for, or the system's choice for port 0).
    package let port: Int
    /// The node's metrics (also read by `/metrics`).
    package let metrics: NodeMetrics
    private let tasks: [Task<Void, Never>]

    private init(port: Int, metrics: NodeMetrics, tasks: [Task<Void, Never>]) {
        self.port = port
        self.metrics = metrics
        self.tasks = tasks
    }

    /// Binds `configuration.host:port` and serves `node` there.
    /// - Throws: ``HTTPServerError`` when the address is beyond loopback without
    ///   ``HTTPConfiguration/allowsPlainTextBeyondLoopback``, or cannot be bound.
    package static func start(node: ShoalNode, configuration: HTTPConfiguration, dataDirectory: String?, logger: Logger) async throws(HTTPServerError) -> HTTPServer {
        guard HTTPConfiguration.isLoopback(configuration.host) || configuration.allowsPlainTextBeyondLoopback else {
            throw HTTPServerError(message: "--http \(configuration.host):\(configuration.port) is beyond loopback: the API key and every record would cross the network unencrypted. Bind 127.0.0.1 and reach it through an SSH tunnel or a TLS proxy, or add --http-allow-plaintext to accept that")
        }
        let metrics = NodeMetrics(dataDirectory: dataDirectory)
        let hub = ChangeHub(maxListeners: configuration.maxEventStreams * 4)
        let conflicts = ConflictLog()
        let api = NodeAPI(node: node, configuration: configuration, metrics: metrics, hub: hub, conflicts: conflicts)
        let (bound, boundContinuation) = AsyncStream<Result<Int, HTTPServerError>>.makeStream()
        // Hummingbird logs a stop's cancellation as an error; its real failures are thrown here
        // (binding) or answered as JSON (requests). Its lines show from --log-level debug on.
        var quiet = logger
        quiet.logLevel = logger.logLevel <= .debug ? logger.logLevel : .critical
        let app = Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in await api.respond(to: request) },
            server: .http1(configuration: .init(idleTimeout: .seconds(configuration.idleTimeoutSeconds))),
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                   availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections)),
            onServerRunning: { channel in boundContinuation.yield(.success(channel.localAddress?.port ?? configuration.port)) },
            logger: quiet
        )
        let serving = Task {
            do {
                try await app.run()
            } catch {
                boundContinuation.yield(.failure(HTTPServerError(message: "cannot serve HTTP on \(configuration.host):\(configuration.port): \(error); choose another address with --http HOST:PORT, or --no-http")))
            }
            boundContinuation.finish()
        }
        var first = bound.makeAsyncIterator()
        guard let result = await first.next() else {
            serving.cancel()
            throw HTTPServerError(message: "the HTTP server on \(configuration.host):\(configuration.port) stopped before it started")
        }
        let port: Int
        switch result {
        case .success(let p): port = p
        case .failure(let e):
            serving.cancel()
            throw e
        }
        let following = Task { await hub.run(node: node) { n in await metrics.observeLatency(of: n, node: node) } }
        let logging = Task { await conflicts.run(node: node) }
        return HTTPServer(port: port, metrics: metrics, tasks: [serving, following, logging])
    }

    /// Stops serving: open connections close, listeners end, the hub's subscription goes.
    package func stop() async {
        for t in tasks { t.cancel() }
        for t in tasks { await t.value }
    }
}

/// The HTTP server could not start.
package struct HTTPServerError: Error, CustomStringConvertible {
    /// What went wrong, and the fix.
    package let message: String
    package var description: String { message }
}
