// CodableConformanceTests: the Codable forms of ShoalWire's value types, through JSON.

import Foundation
import Testing
import ShoalWire

@Suite struct CodableConformanceTests {
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test func referenceAssetLocationAndTimestampRoundTrip() throws {
        let zone = RecordZone.ID(name: "notes", owner: "ada")
        let reference = Reference(recordID: Record.ID(name: "n1", zone: zone), action: .deleteSelf)
        #expect(
            try Self.json(reference) == #"{"action":1,"recordID":{"name":"n1","zone":{"name":"notes","owner":"ada"}}}"#)
        #expect(try JSONDecoder().decode(Reference.self, from: Data(Self.json(reference).utf8)) == reference)

        let hash = try #require(ContentHash(bytes: [UInt8](repeating: 0xAB, count: 32)))
        let asset = Asset(hash: hash, size: 42)
        #expect(try Self.json(asset) == #"{"hash":"\#(hash.hex)","size":42}"#)
        #expect(try JSONDecoder().decode(Asset.self, from: Data(Self.json(asset).utf8)) == asset)

        let location = Location(
            latitude: 59.9, longitude: 10.7, altitude: 12, timestamp: Timestamp(millisecondsSince1970: 5))
        #expect(try Self.json(location) == #"{"altitude":12,"latitude":59.9,"longitude":10.7,"timestamp":5}"#)
        #expect(try JSONDecoder().decode(Location.self, from: Data(Self.json(location).utf8)) == location)
    }

    @Test func malformedFormsAreRejected() {
        for text in [#"{"hash":"zz","size":1}"#, #"{"hash":"\#(String(repeating: "ab", count: 32))","size":-1}"#] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(Asset.self, from: Data(text.utf8)) }
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(
                Reference.self,
                from: Data(#"{"action":7,"recordID":{"name":"n","zone":{"name":"z","owner":"o"}}}"#.utf8))
        }
    }
}
