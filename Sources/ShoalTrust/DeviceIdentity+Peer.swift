// DeviceIdentity+Peer: what a TLS handshake needs of an identity — its key as DER, a peer's device ID.

import Crypto
import X509
package import ShoalWire

extension DeviceIdentity {
    /// The private key as PKCS #8 DER, for the TLS library (it never leaves the process).
    package var privateKeyDER: [UInt8] { Array(privateKey.derRepresentation) }

    /// The device ID of the certificate a peer presented in a TLS handshake, once it is checked
    /// to be self-signed (its issuer is its subject and its signature verifies with its own key).
    ///
    /// The handshake itself proved that the peer holds the certificate's private key (TLS 1.3
    /// `CertificateVerify`); the device ID is what the node then pins (Spec/security.md §3).
    /// - Throws: ``IdentityError`` `malformed` when the bytes are not an X.509 certificate,
    ///   `mismatch` when it is not self-signed.
    package static func peerDeviceID(ofCertificateDER der: [UInt8]) throws(IdentityError) -> DeviceID {
        let certificate: Certificate
        do {
            certificate = try Certificate(derEncoded: der)
        } catch {
            throw .malformed("not an X.509 certificate: \(error)")
        }
        guard certificate.issuer == certificate.subject,
            certificate.publicKey.isValidSignature(certificate.signature, for: certificate)
        else {
            throw .mismatch(
                "the certificate is not self-signed (its issuer is not its subject, or its signature does not verify with its own key)"
            )
        }
        return try deviceID(ofCertificateDER: der)
    }
}
