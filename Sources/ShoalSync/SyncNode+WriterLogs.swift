// SyncNode+WriterLogs: a node signs the head of its own log for a zone, and checks the checkpoints of others (Spec/authenticated-writes.md §3).

package import Crypto
package import ShoalWire
package import ShoalStore

extension ShareSigner {
    /// `checkpoint`, signed by this device.
    package func sign(_ checkpoint: WriterCheckpoint) -> WriterCheckpoint {
        var c = checkpoint
        c.signature = []
        // Signing fails only for a broken key; an unsigned checkpoint is refused by every receiver.
        c.signature = (try? key.signature(for: c.signedBytes)).map { Array($0.rawRepresentation) } ?? []
        return c
    }
}

extension WriterCheckpoint {
    /// The device whose public key `der` (SubjectPublicKeyInfo DER, P-256) signed this
    /// checkpoint, when the signature verifies under it; nil otherwise.
    package func signer(key der: [UInt8]) -> DeviceID? {
        guard let key = try? P256.Signing.PublicKey(derRepresentation: der),
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              key.isValidSignature(signature, for: signedBytes) else { return nil }
        return ShareSigner.device(ofKey: der)
    }
}

extension SyncNode {
    /// The checkpoint of this node's own log for `zone` at its head: the one held when it
    /// already covers the head, otherwise a new one signed with the device key and kept. Nil
    /// when the node has no device key (its zones are not authenticated), the zone is not
    /// live, or its log is empty.
    package func ownCheckpoint(of zone: RecordZone.ID) async -> WriterCheckpoint? {
        guard let signer else { return nil }
        let node = store.nodeID
        guard let head = try? await store.ownLogHead(of: zone), head.sequence > 0,
              let info = try? await store.zone(zone) else { return nil }
        if let held = try? await store.checkpoint(of: node, in: zone), held.sequence == head.sequence, held.incarnation == info.incarnation {
            return held
        }
        let checkpoint = signer.sign(WriterCheckpoint(zone: zone, incarnation: info.incarnation, writer: node,
                                                      sequence: head.sequence, chain: head.chain))
        do {
            try await store.keepCheckpoint(checkpoint)
        } catch {
            trace?("could not keep the checkpoint of this node's log for \(zone) at #\(head.sequence): \(error)")
        }
        return checkpoint
    }
}
