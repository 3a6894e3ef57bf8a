// HTTPServer: runs the node's HTTP API on Hummingbird until stopped.

import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
package import Logging
import NIOCore
import NIOSSL
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

    /// Binds `configuration.host:port` and serves `node` there, over TLS when
    /// ``HTTPConfiguration/tls`` names a certificate and key.
    /// - Throws: ``HTTPServerError`` when the address is beyond loopback without TLS nor
    ///   ``HTTPConfiguration/allowsPlainTextBeyondLoopback``, when the certificate or key cannot
    ///   be read or do not belong together, or when the address cannot be bound.
    package static func start(node: ShoalNode, configuration: HTTPConfiguration, dataDirectory: String?, logger: Logger)
        async throws(HTTPServerError) -> HTTPServer
    {
        if let refusal = configuration.bindingRefusal { throw HTTPServerError(message: refusal) }
        let http1 = HTTPServerBuilder.http1(
            configuration: .init(idleTimeout: .seconds(configuration.idleTimeoutSeconds)))
        let server: HTTPServerBuilder
        if let files = configuration.tls {
            let tls = try tlsConfiguration(files)
            do { server = try .tls(http1, tlsConfiguration: tls) } catch {
                throw HTTPServerError(
                    message: "cannot set up TLS with \(files.certificatePath) and \(files.privateKeyPath): \(error)")
            }
        } else {
            server = http1
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
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port),
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections)),
            onServerRunning: { channel in
                boundContinuation.yield(.success(channel.localAddress?.port ?? configuration.port))
            },
            logger: quiet
        )
        let serving = Task {
            do {
                try await app.run()
            } catch {
                boundContinuation.yield(
                    .failure(
                        HTTPServerError(
                            message:
                                "cannot serve HTTP on \(configuration.host):\(configuration.port): \(error); choose another address with --http HOST:PORT, or --no-http"
                        )))
            }
            boundContinuation.finish()
        }
        var first = bound.makeAsyncIterator()
        guard let result = await first.next() else {
            serving.cancel()
            throw HTTPServerError(
                message: "the HTTP server on \(configuration.host):\(configuration.port) stopped before it started")
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

    /// The server side of TLS 1.2 or 1.3 with the certificate chain and key in `files`, checked
    /// now (a key that is not the certificate's is refused here, not at the first connection).
    /// - Throws: ``HTTPServerError`` naming the file that cannot be read, or the mismatch.
    static func tlsConfiguration(_ files: TLSFiles) throws(HTTPServerError) -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMFile(files.certificatePath) } catch {
            throw HTTPServerError(
                message:
                    "--http-tls-cert \(files.certificatePath) is not a readable PEM certificate (\(error)); give the server's certificate, then any intermediate ones, in PEM"
            )
        }
        guard !chain.isEmpty else {
            throw HTTPServerError(
                message:
                    "--http-tls-cert \(files.certificatePath) holds no certificate; give the server's certificate, then any intermediate ones, in PEM"
            )
        }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(file: files.privateKeyPath, format: .pem) } catch {
            throw HTTPServerError(
                message:
                    "--http-tls-key \(files.privateKeyPath) is not a readable, unencrypted PEM private key (\(error)); give the key of the certificate's public key"
            )
        }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        do { _ = try NIOSSLContext(configuration: tls) } catch {
            throw HTTPServerError(
                message:
                    "--http-tls-key \(files.privateKeyPath) does not go with --http-tls-cert \(files.certificatePath) (\(error)); give the private key of that certificate"
            )
        }
        return tls
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
