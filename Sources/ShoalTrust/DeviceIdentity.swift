// DeviceIdentity: this device's P-256 key and self-signed certificate, and the device ID they give.

package import Crypto
package import Foundation
package import ShoalWire
package import X509
import SwiftASN1

/// A device's identity: a P-256 private key and the self-signed X.509 certificate for its public
/// key (Spec/security.md "Device identity").
///
/// The ``deviceID`` is the SHA-256 of the certificate's SubjectPublicKeyInfo DER, so a peer that
/// sees the certificate during a TLS handshake computes the same ID with
/// ``deviceID(ofCertificateDER:)``. Construction checks that the key and the certificate belong
/// together; a `DeviceIdentity` value is always consistent.
package struct DeviceIdentity: Sendable {
    /// The private key. Never leaves the device.
    package let privateKey: P256.Signing.PrivateKey
    /// The self-signed certificate for ``privateKey``'s public key.
    package let certificate: Certificate
    /// The certificate's DER bytes, as presented to peers.
    package let certificateDER: [UInt8]
    /// The ID peers know this device by.
    package let deviceID: DeviceID

    /// Pairs a key with its certificate.
    /// - Throws: ``IdentityError`` `malformed` when the certificate cannot be encoded, `mismatch`
    ///   when it is not for `privateKey`'s public key or its signature does not verify.
    package init(privateKey: P256.Signing.PrivateKey, certificate: Certificate) throws(IdentityError) {
        let der: [UInt8]
        do {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            der = serializer.serializedBytes
        } catch {
            throw .malformed("the certificate cannot be encoded as DER: \(error)")
        }
        guard certificate.publicKey == Certificate.PublicKey(privateKey.publicKey) else {
            throw .mismatch("the certificate is for another key than the private key")
        }
        guard certificate.publicKey.isValidSignature(certificate.signature, for: certificate) else {
            throw .mismatch(
                "the certificate's signature does not verify with its own public key (it is not self-signed, or it was altered)"
            )
        }
        let id = try Self.deviceID(ofCertificateDER: der)
        guard id == Self.deviceID(of: privateKey.publicKey) else {
            throw .mismatch(
                "the certificate encodes its public key differently from the key's own SubjectPublicKeyInfo (\(id) ≠ \(Self.deviceID(of: privateKey.publicKey)))"
            )
        }
        self.privateKey = privateKey
        self.certificate = certificate
        self.certificateDER = der
        self.deviceID = id
    }

    /// A new identity: a fresh key from the system's secure generator and its certificate.
    /// - Throws: ``IdentityError`` `malformed` if the certificate cannot be made (not expected).
    package static func generate(now: Date = Date()) throws(IdentityError) -> DeviceIdentity {
        let key = P256.Signing.PrivateKey()
        return try DeviceIdentity(privateKey: key, certificate: selfSignedCertificate(for: key, now: now))
    }

    /// The device ID of a public key: the SHA-256 of its SubjectPublicKeyInfo DER.
    package static func deviceID(of publicKey: P256.Signing.PublicKey) -> DeviceID {
        deviceID(ofSubjectPublicKeyInfo: publicKey.derRepresentation)
    }

    /// The device ID of a certificate given as DER (a peer's, from a TLS handshake): the SHA-256
    /// of its SubjectPublicKeyInfo, exactly as the certificate encodes it.
    /// - Throws: ``IdentityError`` `malformed` when the bytes are not an X.509 certificate.
    package static func deviceID(ofCertificateDER der: [UInt8]) throws(IdentityError) -> DeviceID {
        do {
            _ = try Certificate(derEncoded: der)
        } catch {
            throw .malformed("not an X.509 certificate: \(error)")
        }
        guard let spki = subjectPublicKeyInfo(ofCertificateDER: der) else {
            throw .malformed("not an X.509 certificate: no SubjectPublicKeyInfo where RFC 5280 puts it")
        }
        return deviceID(ofSubjectPublicKeyInfo: spki)
    }

    static func deviceID(ofSubjectPublicKeyInfo spki: some DataProtocol) -> DeviceID {
        let digest = SHA256.hash(data: spki)
        // A SHA-256 digest is always 32 bytes.
        guard let id = DeviceID(bytes: digest) else { preconditionFailure("SHA-256 gave \(Array(digest).count) bytes") }
        return id
    }

    /// The SubjectPublicKeyInfo element of a certificate, as encoded: Certificate → TBSCertificate
    /// → (optional [0] version), serialNumber, signature, issuer, validity, subject, SPKI.
    static func subjectPublicKeyInfo(ofCertificateDER der: [UInt8]) -> ArraySlice<UInt8>? {
        guard let root = try? DER.parse(der), case .constructed(let parts) = root.content,
            let tbs = Array(parts).first, case .constructed(let fields) = tbs.content
        else { return nil }
        var rest = Array(fields)
        if let first = rest.first, first.identifier.tagClass == .contextSpecific, first.identifier.tagNumber == 0 {
            rest.removeFirst()
        }
        guard rest.count > 5, rest[5].identifier == .sequence else { return nil }
        return rest[5].encodedBytes
    }
}
