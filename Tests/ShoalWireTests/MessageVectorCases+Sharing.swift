// MessageVectorCases+Sharing: messages.json cases for zone shares in announcements (ZoneShare,
// Spec/security.md §6), their JSON form, and the signature check every valid share passes.

import Crypto
import Foundation
import Testing
import ShoalSamples
@testable import ShoalWire
import ShoalWireJSON

extension VectorJSON {
    /// The shares a hello or zones vector carries, each with the `owner_device` its JSON states.
    static func shares(_ kind: String, _ bytes: [UInt8], _ json: [String: Any]) throws -> [(
        share: ZoneShare, ownerDevice: String
    )] {
        let zones: [ZoneAnnouncement]
        switch kind {
        case "hello": zones = try HelloMessage(decoding: bytes).zones
        case "zones": zones = try ZonesMessage(decoding: bytes).zones
        default: return []
        }
        let stated = try array(json["zones"], "zones")
        guard stated.count == zones.count else {
            throw VectorJSONError("zones: \(stated.count) in the JSON, \(zones.count) decoded")
        }
        var out = [(share: ZoneShare, ownerDevice: String)]()
        for (a, z) in zip(zones, stated) {
            guard let share = a.share else { continue }
            let o = try object(try object(z, "zone")["share"], "share")
            out.append((share, try string(o["owner_device"], "share.owner_device")))
        }
        return out
    }
}

/// The signature check of a share, done here with swift-crypto from the Spec's definition rather
/// than with ShoalSync's, so the vectors are checked independently of the implementation.
enum ShareSignature {
    /// The signed bytes as security.md §6 defines them: the context, then the share's encoding up
    /// to (not including) the signature's length prefix.
    static func signedBytes(_ s: ZoneShare) -> [UInt8] {
        let encoded = s.encoded()
        return ZoneShare.signatureContext
            + encoded.prefix(encoded.count - WireSize.varint(UInt64(s.signature.count)) - s.signature.count)
    }

    /// The owner's device ID (SHA-256 of the owner key) when the signature (raw r‖s, ECDSA P-256
    /// over SHA-256 of the signed bytes) verifies and the owner is not a member; nil otherwise.
    static func verifiedOwner(_ s: ZoneShare) -> DeviceID? {
        guard let key = try? P256.Signing.PublicKey(derRepresentation: s.ownerKey),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: s.signature),
            key.isValidSignature(signature, for: signedBytes(s)),
            let owner = DeviceID(bytes: SHA256.hash(data: s.ownerKey)),
            s.role(of: owner) == nil
        else { return nil }
        return owner
    }
}

@Suite struct ShareVectorTests {
    /// The frozen signatures of ShareSamples verify under its owner key, which is the public key of
    /// its private key; a failure prints a fresh signature to paste into ShareSamples.
    @Test(arguments: ShareSamples.all.map { $0.name })
    func sampleShareIsSignedByTheSampleKey(_ name: String) throws {
        let share = try #require(ShareSamples.all.first { $0.name == name }?.share)
        let key = try P256.Signing.PrivateKey(rawRepresentation: ShareSamples.ownerPrivateKey)
        #expect(Array(key.publicKey.derRepresentation) == ShareSamples.ownerKey)
        #expect(Hex.string(Array(SHA256.hash(data: ShareSamples.ownerKey))) == ShareSamples.ownerDevice.hex)
        #expect(
            share.signedBytes == ShareSignature.signedBytes(share),
            "ZoneShare.signedBytes is not what security.md §6 defines")
        let fresh = try key.signature(for: share.signedBytes).rawRepresentation
        #expect(
            ShareSignature.verifiedOwner(share) == ShareSamples.ownerDevice,
            "ShareSamples.\(name)'s signature does not verify; a fresh one: \(Hex.string(Array(fresh)))")
    }

    /// A share whose signature is altered, or signed over other bytes, does not verify.
    @Test func alteredSharesDoNotVerify() {
        var s = ShareSamples.twoMembers
        s.signature[10] ^= 1
        #expect(ShareSignature.verifiedOwner(s) == nil)
        s = ShareSamples.twoMembers
        s.serial += 1
        #expect(ShareSignature.verifiedOwner(s) == nil)
        s = ShareSamples.twoMembers
        s.members[0].role = .readWrite
        #expect(ShareSignature.verifiedOwner(s) == nil)
    }
}

/// Hand-assembled zones payloads with one shared zone, for inputs no encoder writes.
enum ShareWire {
    typealias W = SparseWire
    typealias S = ShareSamples

    /// One member as bytes: its device, then its role byte.
    static func member(_ d: DeviceID, _ role: UInt8) -> [UInt8] { d.bytes + [role] }
    static let twoMembers = member(S.reader, 1) + member(S.writer, 2)

    /// A share; each part is given by its value or, to break a rule, as raw bytes.
    static func share(
        zone: RecordZone.ID = S.zone, incarnation: NodeID = S.incarnation, serial: UInt64 = 3, flags: UInt8 = 0,
        key: [UInt8] = S.ownerKey, count: UInt64 = 2, members: [UInt8] = twoMembers,
        signature: [UInt8] = S.twoMembers.signature
    ) -> [UInt8] {
        W.str(zone.name) + W.str(zone.owner) + W.node(incarnation) + W.varint(serial) + [flags] + W.bytes(key)
            + W.varint(count) + members + W.bytes(signature)
    }

    /// A zones payload announcing ``ShareSamples/zone`` with `flags`, followed by `share`.
    static func zones(flags: UInt8 = 2, incarnation: NodeID = S.incarnation, _ share: [UInt8]) -> [UInt8] {
        [1] + W.str(S.zone.name) + W.str(S.zone.owner) + W.node(incarnation) + [flags] + share
    }

    /// Offsets in ``zones(flags:incarnation:_:)`` with the default share.
    static let announcementFlagsAt = 1 + WireSize.zoneID(S.zone) + 16
    static let shareAt = announcementFlagsAt + 1
    static let shareFlagsAt = shareAt + WireSize.zoneID(S.zone) + 16 + 1
    static let ownerKeyAt = shareFlagsAt + 1
    static let memberCountAt = ownerKeyAt + 1 + S.ownerKey.count
    static let secondMemberAt = memberCountAt + 1 + DeviceID.byteCount + 1
    static let firstRoleAt = memberCountAt + 1 + DeviceID.byteCount
    static let signatureAt = memberCountAt + 1 + 2 * (DeviceID.byteCount + 1)
}

extension MessageVectorTests {
    /// Announcements with shares (Spec/security.md §6, replication.md §3.1.1): valid ones with real
    /// signatures (ShareSamples), and one invalid vector per check of the share decoder.
    func shareVectors(valid: (String, String, [UInt8]) throws -> Void, invalid: (String, String, [UInt8]) -> Void)
        throws
    {
        typealias S = ShareSamples
        typealias X = ShareWire
        func reject(_ name: String, _ code: String, at offset: Int, _ bytes: [UInt8]) {
            switch Result(catching: { try VectorJSON.message("zones", bytes) }) {
            case .success:
                Issue.record("\(name) decoded; expected \(code)")
            case .failure(let error):
                let e = error as? WireError
                if e?.code.name != code || e?.offset != offset {
                    Issue.record("\(name): expected \(code) at \(offset), got \(error)")
                }
            }
            invalid(name, "zones", bytes)
        }
        let a = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)
        let plain = ZoneAnnouncement(zone: RecordZone.ID(name: "notes"), incarnation: S.incarnation)
        // The builder writes what the encoder writes.
        #expect(X.zones(X.share()) == ZonesMessage(zones: [ZoneAnnouncement(share: S.twoMembers)]).encoded())

        try valid(
            "zones-share-two-members", "zones", ZonesMessage(zones: [ZoneAnnouncement(share: S.twoMembers)]).encoded())
        try valid(
            "hello-shared-and-plain-zone", "hello",
            HelloMessage(node: a, name: "node-a", zones: [ZoneAnnouncement(share: S.twoMembers), plain]).encoded())
        try valid("zones-share-deleted", "zones", ZonesMessage(zones: [ZoneAnnouncement(share: S.deleted)]).encoded())
        try valid(
            "zones-share-no-members", "zones", ZonesMessage(zones: [ZoneAnnouncement(share: S.noMembers)]).encoded())

        // The announcement and its share.
        reject(
            "zones-share-reserved-zone-flag", "unknown_required_tag", at: X.announcementFlagsAt,
            X.zones(flags: 6, X.share()))
        reject("zones-share-missing", "truncated", at: X.shareAt, X.zones([]))
        reject(
            "zones-share-other-zone", "invalid_value", at: X.shareAt,
            X.zones(X.share(zone: RecordZone.ID(name: "lab", owner: "eve"))))
        reject(
            "zones-share-other-incarnation", "invalid_value", at: X.shareAt,
            X.zones(X.share(incarnation: NodeID(high: 0x1AC0_0000_0000_0001, low: 0x3))))
        reject("zones-share-deleted-zone-live", "invalid_value", at: X.shareAt, X.zones(X.share(flags: 1)))
        reject("zones-share-live-zone-deleted", "invalid_value", at: X.shareAt, X.zones(flags: 3, X.share()))
        // The share's own fields.
        reject("zones-share-reserved-flag", "unknown_required_tag", at: X.shareFlagsAt, X.zones(X.share(flags: 2)))
        reject("zones-share-empty-owner-key", "invalid_value", at: X.ownerKeyAt, X.zones(X.share(key: [])))
        reject(
            "zones-share-owner-key-over-limit", "limit_exceeded", at: X.ownerKeyAt,
            X.zones(
                X.share(
                    key: S.ownerKey + [UInt8](repeating: 0, count: ZoneShare.maxOwnerKeyBytes + 1 - S.ownerKey.count))))
        reject(
            "zones-share-member-count-over-limit", "limit_exceeded", at: X.memberCountAt,
            X.zones(X.share(count: UInt64(ZoneShare.maxMembers + 1))))
        reject(
            "zones-share-members-truncated", "truncated", at: X.memberCountAt + 1,
            X.zones(X.share(count: 3, signature: [])))
        reject(
            "zones-share-unsorted-members", "unsorted", at: X.secondMemberAt,
            X.zones(X.share(members: X.member(S.writer, 2) + X.member(S.reader, 1))))
        reject(
            "zones-share-duplicate-member", "duplicate", at: X.secondMemberAt,
            X.zones(X.share(members: X.member(S.reader, 1) + X.member(S.reader, 2))))
        reject(
            "zones-share-member-role-0", "invalid_value", at: X.firstRoleAt,
            X.zones(X.share(members: X.member(S.reader, 0) + X.member(S.writer, 2))))
        reject(
            "zones-share-member-role-3", "invalid_value", at: X.firstRoleAt,
            X.zones(X.share(members: X.member(S.reader, 3) + X.member(S.writer, 2))))
        reject(
            "zones-share-signature-63-bytes", "invalid_value", at: X.signatureAt,
            X.zones(X.share(signature: Array(S.twoMembers.signature.dropLast()))))
        reject(
            "zones-share-signature-65-bytes", "limit_exceeded", at: X.signatureAt,
            X.zones(X.share(signature: S.twoMembers.signature + [0])))
        reject(
            "zones-share-truncated-signature", "truncated", at: X.signatureAt + 1, Array(X.zones(X.share()).dropLast()))
    }
}
