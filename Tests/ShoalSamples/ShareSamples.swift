// ShareSamples: zone shares signed by a fixed test key, for the message vectors and fuzz seeds.

package import ShoalWire

/// Zone shares (``ZoneShare``) with real signatures, the same bytes every time.
///
/// The owner is the P-256 key whose raw private scalar is the bytes 0x01…0x20 (a test key, known
/// to everyone). ECDSA signatures are randomised, so each share was signed once and its signature
/// is frozen here; `ShareVectorTests` in ShoalWireTests checks that each one verifies under
/// ``ownerKey`` over the share's ``ZoneShare/signedBytes``, and prints a fresh signature to paste
/// when a share's contents change.
package enum ShareSamples {
    /// The owner's raw P-256 private key (a test key: never use it for anything else).
    package static let ownerPrivateKey: [UInt8] = Array(1...32)

    /// The owner's public key, SubjectPublicKeyInfo DER (91 bytes).
    package static let ownerKey = bytes(
        "3059301306072a8648ce3d020106082a8648ce3d03010703420004515c3d6eb9e396b904d3feca7f54fdcd0cc1e997bf375dca515ad0a6c3b4035f4536be3a50f318fbf9a5475902a221502bef0d57e08c53b2cc0a56f17d9f9354"
    )

    /// The owner's device ID: the SHA-256 of ``ownerKey``.
    package static let ownerDevice = device("f1d59449b727165de732bf283338122b99628a615918fedc67d878fffcf47da7")

    /// A read-only member (bytes 0x20…0x3F).
    package static let reader = device("202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f")
    /// A read-write member (bytes 0x40…0x5F).
    package static let writer = device("404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f")

    /// The shared zone, and the incarnation every sample share is for.
    package static let zone = RecordZone.ID(name: "lab", owner: "bob")
    package static let incarnation = NodeID(high: 0x1AC0_0000_0000_0001, low: 0x2)

    /// `zone` shared with ``reader`` (read-only) and ``writer`` (read-write), serial 3.
    package static let twoMembers = ZoneShare(
        zone: zone, incarnation: incarnation, serial: 3, ownerKey: ownerKey,
        members: [
            ZoneShare.Member(device: reader, role: .readOnly), ZoneShare.Member(device: writer, role: .readWrite)
        ],
        signature: bytes(
            "c782a2dd7ee1109a6a2cd005b181946275f572088a114aea055a01a380f7c23180c3e50f4c6e1c977eb06191f51f797509c01856c274b054f6c6a53b8598252a"
        ))

    /// ``twoMembers`` after the owner deleted the zone: serial 4, deleted, the members kept.
    package static let deleted = ZoneShare(
        zone: zone, incarnation: incarnation, serial: 4, isDeleted: true, ownerKey: ownerKey,
        members: twoMembers.members,
        signature: bytes(
            "89018eeb5b16fa6354cc758f9d7c3630f517a4307a8404d9c1146515bcde3e6ac6baf3830154f3458fac12ac52a896387aaf083944cc6c4c7949a07a198bfbcb"
        ))

    /// Zone `notes` as its owner created it: serial 1, no members yet.
    package static let noMembers = ZoneShare(
        zone: RecordZone.ID(name: "notes"), incarnation: incarnation, serial: 1, ownerKey: ownerKey, members: [],
        signature: bytes(
            "6e3e774015dabcd4b93b91f3b71033134e96a189fecef2ea443098cb4529a8ef9d442073a6867374093f0ab64a3004cd68769e83ec3563537440847a7eba60f6"
        ))

    /// Every sample share, by name.
    package static let all: [(name: String, share: ZoneShare)] = [
        ("twoMembers", twoMembers), ("deleted", deleted), ("noMembers", noMembers)
    ]

    static func device(_ hex: String) -> DeviceID {
        guard let d = DeviceID(hex: hex) else { preconditionFailure("\(hex) is not 64 hex digits") }
        return d
    }

    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        precondition(digits.count % 2 == 0, "\(hex) has an odd number of digits")
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            default: preconditionFailure("\(hex) is not lowercase hex")
            }
        }
        return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
    }
}
