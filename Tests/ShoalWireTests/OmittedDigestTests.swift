// OmittedDigestTests: SparseRecord.OmittedDigest against the worked example of Spec/replication.md §3.5.1.

import Testing
@testable import ShoalWire

@Suite struct OmittedDigestTests {
    /// The example's node: every byte different, so a byte-order slip in either half shows.
    static let node = NodeID(hex: "00112233445566778899aabbccddeeff")!
    static let creation = Dot(node: node, hlc: HLC(milliseconds: 1_790_000_000_000, logical: 0))
    static let titleStamp = Dot(node: node, hlc: HLC(milliseconds: 1_790_000_060_000, logical: 2))

    /// The bytes fed to FNV-1a, in order, as the Spec lists them.
    static let specInput = [
        "77 66 55 44 33 22 11 00 ff ee dd cc bb aa 99 88", "00 00 00 6c 50 c4 a0 01",  // creation
        "04 00 00 00 00 00 00 00", "64 6f 6e 65",  // "done"
        "77 66 55 44 33 22 11 00 ff ee dd cc bb aa 99 88", "00 00 00 6c 50 c4 a0 01",  // its stamp
        "05 00 00 00 00 00 00 00", "74 69 74 6c 65",  // "title"
        "77 66 55 44 33 22 11 00 ff ee dd cc bb aa 99 88", "02 00 60 56 51 c4 a0 01"  // its stamp
    ].joined(separator: " ")

    @Test func theWorkedExampleOfTheSpec() throws {
        let bytes = try #require(Hex.bytes(Self.specInput.filter { $0 != " " }))
        #expect(bytes.count == 97)
        // The Spec's bytes digest to its value…
        var fnv = FNV1a64()
        fnv.add(bytes: bytes)
        #expect(fnv.value == 0xBE68_AAF1_D24C_810C)
        // …and so do the creation and the two slots, fed as the implementation feeds them.
        var digest = SparseRecord.OmittedDigest(creation: Self.creation)
        digest.add(Record.Field(name: "done", value: .bool(true), stamp: Self.creation))
        digest.add(Record.Field(name: "title", value: .string("Groceries"), stamp: Self.titleStamp))
        #expect(digest.value == 0xBE68_AAF1_D24C_810C)
        // On the wire, a fixed64: little-endian.
        #expect(Hex.string(withUnsafeBytes(of: digest.value.littleEndian, Array.init)) == "0c814cd2f1aa68be")
    }

    /// Values are not fed: a stamp names the one write that set a slot.
    @Test func valuesAreNotFed() {
        var a = SparseRecord.OmittedDigest(creation: Self.creation), b = a
        a.add(Record.Field(name: "title", value: .string("Groceries"), stamp: Self.titleStamp))
        b.add(Record.Field(name: "title", value: nil, stamp: Self.titleStamp))
        #expect(a.value == b.value)
    }
}
