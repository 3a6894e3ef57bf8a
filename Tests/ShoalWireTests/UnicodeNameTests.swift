// UnicodeNameTests: names and strings are byte strings; canonically equivalent text stays distinct.

import Testing
@testable import ShoalWire

/// Swift's `String ==` treats canonically equivalent text ("é" and "e" + U+0301) as equal, but
/// the wire format (Spec/wire-format.md §3.4) compares names and strings by their UTF-8 bytes.
@Suite struct UnicodeNameTests {
    static let composed = "caf\u{E9}"  // é as one scalar (NFC)
    static let decomposed = "cafe\u{301}"  // e + combining acute (NFD)

    @Test func referenceToEquivalentButDistinctZoneKeepsItsZone() throws {
        let home = RecordZone.ID(name: Self.composed)
        let other = RecordZone.ID(name: Self.decomposed)
        var r = Record(recordType: "Note", id: Record.ID(name: "n", zone: home))
        r["link"] = .reference(Reference(recordID: Record.ID(name: "t", zone: other)))
        let back = try Record(decoding: r.encoded())
        guard case .reference(let ref)? = back["link"] else {
            Issue.record("link is not a reference")
            return
        }
        #expect(Array(ref.recordID.zone.name.utf8) == Array(Self.decomposed.utf8))
        #expect(back.encoded() == r.encoded())
    }

    @Test func distinctZonesAndNamesAreUnequal() {
        #expect(RecordZone.ID(name: Self.composed) != RecordZone.ID(name: Self.decomposed))
        #expect(RecordZone.ID(name: "z", owner: Self.composed) != RecordZone.ID(name: "z", owner: Self.decomposed))
        let z = RecordZone.ID(name: "z")
        #expect(Record.ID(name: Self.composed, zone: z) != Record.ID(name: Self.decomposed, zone: z))
        #expect(Set([Record.ID(name: Self.composed, zone: z), Record.ID(name: Self.decomposed, zone: z)]).count == 2)
    }

    @Test func stringValuesCompareByBytes() {
        #expect(FieldValue.string(Self.composed) != FieldValue.string(Self.decomposed))
        #expect(ListValue.string([Self.composed]) != ListValue.string([Self.decomposed]))
        #expect(Set([FieldValue.string(Self.composed), FieldValue.string(Self.decomposed)]).count == 2)
        #expect(FieldValue.string(Self.composed) == FieldValue.string("caf\u{E9}"))
    }
}

extension UnicodeNameTests {
    @Test func zoneOrderIsByBytesOfNameThenOwner() {
        // Names equivalent but byte-different: the name decides, not the owner.
        let a = RecordZone.ID(name: Self.composed, owner: "a")  // "caf\xC3\xA9" > "cafe\xCC\x81"
        let b = RecordZone.ID(name: Self.decomposed, owner: "b")
        #expect(b < a)
        #expect(!(a < b))
    }
}
