// HTTPConfiguration: where the daemon's HTTP API listens, its key, and the limits every request meets.

/// What the HTTP API listens on and the bounds it holds every client to.
///
/// The defaults are the daemon's: loopback only, 1 MiB request bodies, 30 s to send a request,
/// long polls of at most 60 s.
package struct HTTPConfiguration: Sendable {
    /// The host to bind, `127.0.0.1` by default.
    package var host = "127.0.0.1"
    /// The port to bind; 0 asks the system for a free one (the bound port is returned by ``HTTPServer/start(node:configuration:logger:)``).
    package var port = 8384
    /// The API key every request must carry (`X-API-Key`, or `Authorization: Bearer KEY`).
    package var apiKey: APIKey
    /// Whether to bind an address other than loopback without TLS: the key and every record
    /// would cross the network in clear, so the daemon refuses unless told so.
    package var allowsPlainTextBeyondLoopback = false
    /// The certificate and key to serve HTTPS with (`--http-tls-cert`, `--http-tls-key`); nil
    /// serves plain HTTP. With them any address may be bound.
    package var tls: TLSFiles?
    /// The largest request body taken, in bytes; a larger one is refused with 413.
    package var maxBodyBytes = 1 << 20
    /// Seconds a connection may stay silent (while sending its request, or between two
    /// requests) before it is closed.
    package var idleTimeoutSeconds: Int64 = 30
    /// The longest a changes long poll may wait, in seconds.
    package var maxWaitSeconds = 60
    /// The most connections open at once; more wait to be accepted.
    package var maxConnections = 128
    /// The most event streams (`/api/v1/events`) open at once.
    package var maxEventStreams = 16

    /// A configuration with `apiKey` and the defaults.
    package init(apiKey: APIKey) {
        self.apiKey = apiKey
    }

    /// Why ``host`` may not be bound as configured (beyond loopback, without TLS and without
    /// ``allowsPlainTextBeyondLoopback``), with the fixes; nil when it may.
    package var bindingRefusal: String? {
        guard !Self.isLoopback(host), tls == nil, !allowsPlainTextBeyondLoopback else { return nil }
        return
            "--http \(host):\(port) is beyond loopback: the API key and every record would cross the network unencrypted. Give a certificate and its key (--http-tls-cert PATH --http-tls-key PATH) to serve HTTPS, bind 127.0.0.1 and reach it through an SSH tunnel or a TLS proxy, or add --http-allow-plaintext to accept that"
    }

    /// Whether `host` names this machine's loopback interface only.
    package static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

/// The files HTTPS is served with: a PEM certificate (the server's first, then any intermediate
/// certificates) and the PEM private key of the first.
package struct TLSFiles: Sendable, Hashable {
    /// The certificate chain's file.
    package var certificatePath: String
    /// The private key's file.
    package var privateKeyPath: String

    /// The files at `certificatePath` and `privateKeyPath`.
    package init(certificatePath: String, privateKeyPath: String) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
    }
}
