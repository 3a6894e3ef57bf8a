// PeerTLS: the TLS 1.3 contexts of a node's peer connections — mutual, self-signed, pinned by device ID.

import NIOCore
import NIOSSL
package import ShoalTrust
public import ShoalWire

/// How a node speaks TLS to its peers: TLS 1.3 only, both sides present their device's
/// self-signed certificate, and no certificate authority is consulted — the peer's device ID
/// (the SHA-256 of its certificate's public key) is what the node trusts or not
/// (Spec/security.md §3).
///
/// Made once per node from its ``DeviceIdentity``; every connection, accepted or dialled, uses it.
public struct PeerTLS: Sendable {
    /// This device's ID: the one its certificate gives to peers.
    public let deviceID: DeviceID
    let server: NIOSSLContext
    let client: NIOSSLContext

    /// The contexts for `identity`.
    /// - Throws: NIOSSL's error if the certificate or the key cannot be loaded (not expected for
    ///   an identity that loaded).
    package init(identity: DeviceIdentity) throws {
        let certificate = try NIOSSLCertificate(bytes: identity.certificateDER, format: .der)
        let key = try NIOSSLPrivateKey(bytes: identity.privateKeyDER, format: .der)
        func configure(_ c: inout TLSConfiguration) {
            c.minimumTLSVersion = .tlsv13
            c.maximumTLSVersion = .tlsv13
            // Requires the peer's certificate; the custom callback replaces every check BoringSSL
            // would make against trust roots, which therefore stay empty.
            c.certificateVerification = .noHostnameVerification
            c.trustRoots = .certificates([])
        }
        var server = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        configure(&server)
        var client = TLSConfiguration.makeClientConfiguration()
        client.certificateChain = [.certificate(certificate)]
        client.privateKey = .privateKey(key)
        configure(&client)
        self.server = try NIOSSLContext(configuration: server)
        self.client = try NIOSSLContext(configuration: client)
        deviceID = identity.deviceID
    }

    /// The TLS handler of a new connection: a client's for a dialled one, a server's for an
    /// accepted one. Its verification records the peer's device ID in `gate`.
    func handler(dialing: Bool, gate: TrustGate) throws -> NIOSSLHandler {
        let verify: NIOSSLCustomVerificationCallback = { certificates, promise in
            promise.succeed(Self.verify(certificates, into: gate))
        }
        return dialing
            ? try NIOSSLClientHandler(context: client, serverHostname: nil, customVerificationCallback: verify)
            : NIOSSLServerHandler(context: server, customVerificationCallback: verify)
    }

    /// Accepts exactly one self-signed certificate and records its device ID; whether that device
    /// is trusted is decided after the handshake, by the node (so an unknown device can be listed
    /// as pending). The TLS handshake has proved the peer holds the certificate's key.
    static func verify(_ certificates: [NIOSSLCertificate], into gate: TrustGate) -> NIOSSLVerificationResult {
        guard certificates.count == 1, let der = try? certificates[0].toDERBytes(),
            let device = try? DeviceIdentity.peerDeviceID(ofCertificateDER: der)
        else {
            return .failed
        }
        gate.peer = device
        return .certificateVerified
    }
}
