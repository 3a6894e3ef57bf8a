// ShareSigner: a device signs its zones' shares and its writer-log checkpoints, and checks the signatures of others (Spec/security.md §6, Spec/authenticated-writes.md §3).

package import Crypto
public import ShoalWire

/// The key a node signs its zones' shares and its writer-log checkpoints with: its device key
/// (Spec/security.md §6).
public struct ShareSigner: Sendable {
    let key: P256.Signing.PrivateKey
    /// The device the key belongs to: the SHA-256 of its public key's SubjectPublicKeyInfo DER.
    public let device: DeviceID
    /// The public key's SubjectPublicKeyInfo DER, as shares carry it.
    public let publicKeyDER: [UInt8]

    /// A signer for `privateKey` (a device identity's key).
    package init(privateKey: P256.Signing.PrivateKey) {
        key = privateKey
        publicKeyDER = Array(privateKey.publicKey.derRepresentation)
        device = Self.device(ofKey: publicKeyDER)
    }

    /// A signer whose key is the P-256 scalar `raw` (32 bytes), so a seeded simulation makes the
    /// same devices every run; nil when `raw` is not a valid scalar.
    package static func seeded(_ raw: [UInt8]) -> ShareSigner? {
        (try? P256.Signing.PrivateKey(rawRepresentation: raw)).map { ShareSigner(privateKey: $0) }
    }

    /// The device ID of a SubjectPublicKeyInfo DER, as a share or a writer-log range carries a
    /// key: its SHA-256, as for a certificate's key (``DeviceIdentity``).
    package static func device(ofKey der: [UInt8]) -> DeviceID {
        DeviceIdentity.deviceID(ofSubjectPublicKeyInfo: der)
    }

    /// `share` with this device as its owner, signed.
    package func sign(_ share: ZoneShare) -> ZoneShare {
        var s = share
        s.ownerKey = publicKeyDER
        s.signature = []
        // Signing fails only for a broken key; an unsigned share is refused by every receiver.
        s.signature = signature(for: s.signedBytes)
        return s
    }

    /// `checkpoint`, signed by this device.
    package func sign(_ checkpoint: WriterCheckpoint) -> WriterCheckpoint {
        var c = checkpoint
        c.signature = []
        // Signing fails only for a broken key; an unsigned checkpoint is refused by every receiver.
        c.signature = signature(for: c.signedBytes)
        return c
    }

    /// The raw ECDSA signature of `bytes` under this device's key; empty if signing fails.
    func signature(for bytes: [UInt8]) -> [UInt8] {
        (try? key.signature(for: bytes)).map { Array($0.rawRepresentation) } ?? []
    }

    /// The device whose public key `der` (SubjectPublicKeyInfo DER, P-256) made `signature`
    /// (raw) over `bytes`, when it verifies under that key; nil otherwise.
    static func signer(of bytes: [UInt8], signature: [UInt8], key der: [UInt8]) -> DeviceID? {
        guard let key = try? P256.Signing.PublicKey(derRepresentation: der),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            key.isValidSignature(signature, for: bytes)
        else { return nil }
        return device(ofKey: der)
    }
}

extension ZoneShare {
    /// The owner's device ID when the signature verifies under ``ownerKey`` and the owner is not
    /// listed as a member; nil otherwise.
    package var verifiedOwner: DeviceID? {
        guard let owner = ShareSigner.signer(of: signedBytes, signature: signature, key: ownerKey) else { return nil }
        return role(of: owner) == nil ? owner : nil
    }
}

extension WriterCheckpoint {
    /// The device whose public key `der` (SubjectPublicKeyInfo DER, P-256) signed this
    /// checkpoint, when the signature verifies under it; nil otherwise.
    package func signer(key der: [UInt8]) -> DeviceID? {
        ShareSigner.signer(of: signedBytes, signature: signature, key: der)
    }
}
