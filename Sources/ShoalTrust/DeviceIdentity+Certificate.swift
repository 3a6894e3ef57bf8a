// DeviceIdentity+Certificate: the self-signed certificate profile (Spec/security.md "Device identity").

import Crypto
import Foundation
import ShoalWire
import X509

extension DeviceIdentity {
    /// The certificate for `key`: X.509 v3, self-signed with ECDSA P-256 SHA-256, subject and
    /// issuer CN = the device ID's text form, a random 20-byte serial, valid from one day before
    /// `now` to 100 years after it, `basicConstraints` CA:FALSE and `keyUsage` digitalSignature
    /// (both critical).
    /// - Throws: ``IdentityError`` `malformed` if swift-certificates refuses to build it.
    static func selfSignedCertificate(for key: P256.Signing.PrivateKey, now: Date) throws(IdentityError) -> Certificate
    {
        let id = deviceID(of: key.publicKey)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC") ?? utc.timeZone
        let notBefore = now.addingTimeInterval(-86_400)
        let notAfter = utc.date(byAdding: .year, value: 100, to: now) ?? now.addingTimeInterval(36_525 * 86_400)
        do {
            let name = try DistinguishedName { CommonName(id.text) }
            let extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
            }
            let signer = Certificate.PrivateKey(key)
            return try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: signer.publicKey,
                notValidBefore: notBefore, notValidAfter: notAfter, issuer: name, subject: name,
                signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions, issuerPrivateKey: signer)
        } catch {
            throw .malformed("cannot make the device certificate: \(error)")
        }
    }
}
