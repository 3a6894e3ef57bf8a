// SpecVectorInvalidCases: malformed and non-canonical inputs behind Spec/vectors/invalid.json.

@testable import ShoalWire

extension SpecVectorCases {
    static func invalid(_ b: inout VectorBuilder) {
        invalidValues(&b)
        invalidRecords(&b)
        invalidDeltas(&b)
        invalidTombstones(&b)
        invalidTokens(&b)
    }

    static func invalidValues(_ b: inout VectorBuilder) {
        typealias R = Raw
        let zero32 = [UInt8](repeating: 0, count: 32)
        let loc = R.u64(0) + R.u64(0)
        // truncated
        b.invalid("value: empty input", "value", [], .truncated, at: 0)
        b.invalid("value: string shorter than its length", "value", [0x01, 0x05, 0x61, 0x62], .truncated, at: 2)
        b.invalid("value: double of 3 bytes", "value", [0x03, 0, 0, 0], .truncated, at: 1)
        b.invalid("value: int64 varint ends after a continuation byte", "value", [0x02, 0x80], .truncated, at: 1)
        b.invalid(
            "value: asset hash of 31 bytes", "value", [0x08] + [UInt8](repeating: 0, count: 31), .truncated, at: 1)
        b.invalid("value: asset without size", "value", [0x08] + zero32, .truncated, at: 33)
        b.invalid("value: list count above the bytes left", "value", [0x42, 0x05, 0x02], .truncated, at: 2)
        b.invalid("value: location part announced but missing", "value", [0x09] + loc + [0x01], .truncated, at: 18)
        // overlong_varint
        b.invalid("value: int64 zero as two bytes", "value", [0x02, 0x80, 0x00], .overlongVarint, at: 1)
        b.invalid("value: int64 -64 as two bytes", "value", [0x02, 0xFF, 0x00], .overlongVarint, at: 1)
        b.invalid("value: string length zero as two bytes", "value", [0x01, 0x80, 0x00], .overlongVarint, at: 1)
        b.invalid(
            "value: date as ten bytes with a zero last byte", "value",
            [0x06] + [UInt8](repeating: 0x81, count: 9) + [0x00], .overlongVarint, at: 1)
        b.invalid("value: list count as two bytes", "value", [0x42, 0x81, 0x00, 0x02], .overlongVarint, at: 1)
        // varint_overflow
        b.invalid(
            "value: int64 varint of 65 bits", "value", [0x02] + [UInt8](repeating: 0xFF, count: 9) + [0x02],
            .varintOverflow, at: 1)
        b.invalid(
            "value: int64 varint of 11 bytes", "value", [0x02] + [UInt8](repeating: 0x80, count: 10) + [0x01],
            .varintOverflow, at: 1)
        b.invalid(
            "value: asset size of 65 bits", "value", [0x08] + zero32 + [UInt8](repeating: 0x80, count: 9) + [0x7F],
            .varintOverflow, at: 33)
        // invalid_utf8
        b.invalid("value: string with a lone continuation byte", "value", [0x01, 0x02, 0xC3, 0x28], .invalidUTF8, at: 1)
        b.invalid("value: string byte 0xFF", "value", [0x01, 0x01, 0xFF], .invalidUTF8, at: 1)
        b.invalid("value: string with an overlong UTF-8 '/'", "value", [0x01, 0x02, 0xC0, 0xAF], .invalidUTF8, at: 1)
        b.invalid("value: string with a UTF-16 surrogate", "value", [0x01, 0x03, 0xED, 0xA0, 0x80], .invalidUTF8, at: 1)
        b.invalid("value: string with a sequence cut short", "value", [0x01, 0x01, 0xE2], .invalidUTF8, at: 1)
        b.invalid("value: string above U+10FFFF", "value", [0x01, 0x04, 0xF4, 0x90, 0x80, 0x80], .invalidUTF8, at: 1)
        b.invalid(
            "value: list string element not UTF-8", "value", [0x41, 0x02, 0x01, 0x61, 0x01, 0x80], .invalidUTF8, at: 4)
        // trailing_bytes
        b.invalid("value: bool followed by a byte", "value", [0x04, 0x01, 0x00], .trailingBytes, at: 2)
        b.invalid("value: empty string followed by a byte", "value", [0x01, 0x00, 0x00], .trailingBytes, at: 2)
        // unknown_required_tag
        b.invalid("value: type tag 0x0a", "value", [0x0A], .unknownRequiredTag, at: 0)
        b.invalid(
            "value: type tag 0 is a removed-field marker, not a value", "value", [0x00], .unknownRequiredTag, at: 0)
        b.invalid("value: type tag 0x3e (an operation tag)", "value", [0x3E], .unknownRequiredTag, at: 0)
        b.invalid("value: list of kind 0", "value", [0x40, 0x00], .unknownRequiredTag, at: 0)
        b.invalid("value: list of kind 10", "value", [0x4A, 0x00], .unknownRequiredTag, at: 0)
        b.invalid(
            "value: reference flags set reserved bit 2", "value", [0x07, 0x01, 0x61, 0x04], .unknownRequiredTag, at: 3)
        b.invalid("value: location presence sets bit 6", "value", [0x09] + loc + [0x40], .unknownRequiredTag, at: 17)
        // invalid_value
        b.invalid("value: bool byte 2", "value", [0x04, 0x02], .invalidValue, at: 1)
        b.invalid(
            "value: double NaN with payload", "value", [0x03] + R.u64(0x7FF8_0000_0000_0001), .invalidValue, at: 1)
        b.invalid("value: double negative NaN", "value", [0x03] + R.u64(0xFFF8_0000_0000_0000), .invalidValue, at: 1)
        b.invalid("value: double signalling NaN", "value", [0x03] + R.u64(0x7FF0_0000_0000_0001), .invalidValue, at: 1)
        b.invalid(
            "value: list double with a non-canonical NaN", "value",
            [0x43, 0x02] + R.u64(0) + R.u64(0x7FFF_FFFF_FFFF_FFFF), .invalidValue, at: 10)
        b.invalid(
            "value: location latitude non-canonical NaN", "value",
            [0x09] + R.u64(0x7FF8_0000_0000_0002) + R.u64(0) + [0], .invalidValue, at: 1)
        b.invalid(
            "value: reference repeats its own zone", "value",
            [0x07] + R.str("a") + [0x02] + R.str("notes") + R.str("_defaultOwner"), .invalidValue, at: 4)
        b.invalid(
            "value: asset size 2^63", "value", [0x08] + zero32 + [UInt8](repeating: 0x80, count: 9) + [0x01],
            .invalidValue, at: 33)
        b.invalid("value: list bool element 2", "value", [0x44, 0x02, 0x01, 0x02], .invalidValue, at: 3)
        // invalid_name
        b.invalid("value: reference with an empty record name", "value", [0x07, 0x00, 0x00], .invalidName, at: 1)
        b.invalid(
            "value: reference with an empty zone name", "value", [0x07] + R.str("a") + [0x02, 0x00] + R.str("o"),
            .invalidName, at: 4)
        b.invalid(
            "value: reference with an empty zone owner", "value", [0x07] + R.str("a") + [0x02] + R.str("z") + [0x00],
            .invalidName, at: 6)
        // limit_exceeded
        b.invalid("value: list count 65537 (maxListCount)", "value", [0x41, 0x81, 0x80, 0x04], .limitExceeded, at: 1)
        b.invalid(
            "value: reference name of 256 bytes (maxNameBytes)", "value",
            [0x07, 0x80, 0x02] + [UInt8](repeating: 0x61, count: 256) + [0x00], .limitExceeded, at: 1)
        b.invalid("value: string length above maxRecordBytes", "value", [0x01, 0x81, 0x80, 0x40], .limitExceeded, at: 1)
        b.invalid("value: bytes length above maxRecordBytes", "value", [0x05, 0x81, 0x80, 0x40], .limitExceeded, at: 1)
    }

    static func invalidRecords(_ b: inout VectorBuilder) {
        typealias R = Raw
        let a = SpecFixtures.a, bb = SpecFixtures.b
        let h0 = SpecFixtures.hlc(0).rawValue, h1 = SpecFixtures.hlc(1_000).rawValue
        let stampedInt = { (name: String) in R.field(name, 0x82, [0x00, 0x00, 0x02]) }
        let valid = R.record(fields: [stampedInt("a")])
        // truncated
        b.invalid("record: empty input", "record", [], .truncated, at: 0)
        b.invalid("record: ends after the record type", "record", [0x00] + R.str("Note"), .truncated, at: 6)
        b.invalid("record: ends one byte early", "record", Array(valid.dropLast()), .truncated)
        b.invalid(
            "record: vector claims two entries, holds one", "record",
            R.record(vector: [0x02] + Array(R.oneWriter.dropFirst())), .truncated)
        b.invalid("record: field count above the bytes left", "record", R.record(fieldCount: [0x03]), .truncated)
        b.invalid("record: field slot ends after its tag", "record", R.record(fields: [R.field("a", 0x82)]), .truncated)
        // overlong_varint
        b.invalid(
            "record: record type length as two bytes", "record",
            [0x00, 0x84, 0x00] + Array("Note".utf8) + Array(R.unsaved().dropFirst(5)), .overlongVarint, at: 1)
        b.invalid("record: field count as two bytes", "record", R.record(fieldCount: [0x80, 0x00]), .overlongVarint)
        b.invalid(
            "record: creation stamp index as two bytes", "record", R.record(creation: [0x80, 0x00, 0x00]),
            .overlongVarint)
        b.invalid(
            "record: field stamp offset as two bytes", "record",
            R.record(fields: [R.field("a", 0x82, [0x00, 0x80, 0x00, 0x02])]), .overlongVarint)
        // varint_overflow
        b.invalid(
            "record: creation stamp offset of 65 bits", "record",
            R.record(creation: [0x00] + [UInt8](repeating: 0xFF, count: 9) + [0x03]), .varintOverflow)
        b.invalid(
            "record: field count of 70 bits", "record",
            R.record(fieldCount: [UInt8](repeating: 0xFF, count: 9) + [0x7F]), .varintOverflow)
        // invalid_utf8
        b.invalid("record: record name not UTF-8", "record", R.record(name: [0x02, 0xC3, 0x28]), .invalidUTF8, at: 6)
        b.invalid(
            "record: zone owner not UTF-8", "record", R.record(zone: R.str("z") + [0x01, 0xFF]), .invalidUTF8, at: 10)
        b.invalid(
            "record: string field not UTF-8", "record", R.unsaved(fields: [R.field("a", 0x01, [0x01, 0xFE])]),
            .invalidUTF8)
        // trailing_bytes
        b.invalid("record: a byte after the record", "record", valid + [0x00], .trailingBytes, at: valid.count)
        b.invalid("record: extensions not flagged", "record", R.unsaved(extensions: [0x01, 0x01, 0x00]), .trailingBytes)
        // unsorted / duplicate
        b.invalid(
            "record: fields out of order", "record",
            R.unsaved(fields: [R.field("b", 0x04, [0]), R.field("a", 0x04, [0])]), .unsorted)
        b.invalid(
            "record: lowercase before uppercase (byte order)", "record",
            R.unsaved(fields: [R.field("a", 0x04, [0]), R.field("A", 0x04, [0])]), .unsorted)
        b.invalid(
            "record: longer name before its prefix", "record",
            R.unsaved(fields: [R.field("ab", 0x04, [0]), R.field("a", 0x04, [0])]), .unsorted)
        b.invalid(
            "record: field twice", "record", R.unsaved(fields: [R.field("a", 0x04, [0]), R.field("a", 0x04, [1])]),
            .duplicate, at: 18)
        b.invalid(
            "record: removed-field marker repeats a field", "record",
            R.unsaved(fields: [R.field("a", 0x00), R.field("a", 0x04, [1])]), .duplicate, at: 17)
        // Concurrent slots (§6.3): a repeated name is checked, at the name, once its tag and stamp
        // are read. Writers A (entry 0, h0) and B (entry 1, h1 > h0); int64 slots.
        let twoWriters: [UInt8] = [0x02] + R.entry(a, h0, 1) + R.entry(bb, h1, 1)
        let byA = R.field("a", 0x82, [0x00, 0x00, 0x02]), byB = R.field("a", 0x82, [0x01, 0x00, 0x04])
        func concurrent(_ first: [UInt8], _ second: [UInt8]) -> (bytes: [UInt8], at: Int) {
            let bytes = R.record(vector: twoWriters, fields: [first, second])
            return (bytes, bytes.count - second.count)
        }
        var c = concurrent(byA, byB)
        b.invalid("record: concurrent slots, the earlier stamp first", "record", c.bytes, .unsorted, at: c.at)
        c = concurrent(byB, byB)
        b.invalid("record: concurrent slots with equal stamps", "record", c.bytes, .duplicate, at: c.at)
        c = concurrent(byB, R.field("a", 0x02, [0x02]))
        b.invalid("record: concurrent slot without a stamp", "record", c.bytes, .duplicate, at: c.at)
        c = concurrent(byB, R.field("a", 0x82, [0x02, 0x00, 0x02]))
        b.invalid(
            "record: repeated name whose stamp names node index 2 of 2 (stamp checked first)", "record", c.bytes,
            .invalidValue, at: c.at + 3)
        c = concurrent(byB, R.field("a", 0x0A))
        b.invalid(
            "record: repeated name with an undefined tag (repeat checked before the value)", "record", c.bytes,
            .duplicate, at: c.at)
        b.invalid(
            "record: vector nodes out of order", "record",
            R.record(vector: [0x02] + R.entry(bb, h0, 1) + R.entry(a, h0, 0)), .unsorted)
        b.invalid(
            "record: vector node twice", "record", R.record(vector: [0x02] + R.entry(a, h0, 1) + R.entry(a, h0 + 1, 0)),
            .duplicate)
        b.invalid(
            "record: extension tags out of order", "record",
            R.unsaved(flags: 0x02, extensions: [0x02, 0x03, 0x00, 0x01, 0x00]), .unsorted)
        b.invalid(
            "record: extension tag twice", "record", R.unsaved(flags: 0x02, extensions: [0x02, 0x03, 0x00, 0x03, 0x00]),
            .duplicate)
        // unknown_required_tag
        b.invalid("record: flags set reserved bit 2", "record", R.unsaved(flags: 0x04), .unknownRequiredTag, at: 0)
        b.invalid("record: flags set reserved bit 7", "record", R.unsaved(flags: 0x80), .unknownRequiredTag, at: 0)
        b.invalid(
            "record: required (even) extension tag 2", "record", R.unsaved(flags: 0x02, extensions: [0x01, 0x02, 0x00]),
            .unknownRequiredTag)
        b.invalid(
            "record: required extension after an optional one", "record",
            R.unsaved(flags: 0x02, extensions: [0x02, 0x01, 0x00, 0x04, 0x00]), .unknownRequiredTag)
        b.invalid(
            "record: field type tag 0x0a", "record", R.unsaved(fields: [R.field("a", 0x0A)]), .unknownRequiredTag,
            at: 16)
        b.invalid(
            "record: field tag 0x3d (a delta drop) in a record", "record", R.unsaved(fields: [R.field("a", 0x3D)]),
            .unknownRequiredTag, at: 16)
        b.invalid(
            "record: stamped field of list kind 11", "record", R.record(fields: [R.field("a", 0xCB, [0, 0, 0])]),
            .unknownRequiredTag, at: 43)
        // invalid_value
        b.invalid("record: head state 3", "record", R.record(vector: [0x01] + R.entry(a, h0, 3)), .invalidValue)
        b.invalid(
            "record: saved record without a head", "record", R.record(vector: [0x01] + R.entry(a, h0, 0)),
            .invalidValue, at: 12)
        b.invalid("record: zero vector entry", "record", R.record(vector: [0x01] + R.entry(a, 0, 1)), .invalidValue)
        b.invalid(
            "record: creation stamp names node index 1 of 1", "record", R.record(creation: [0x01, 0x00]), .invalidValue)
        b.invalid(
            "record: creation stamp at timestamp zero", "record", R.record(creation: [0x00] + R.varint(h0)),
            .invalidValue)
        b.invalid(
            "record: stamped field in an unsaved record", "record", R.unsaved(fields: [R.field("a", 0x84, [0, 0, 1])]),
            .invalidValue)
        b.invalid(
            "record: extension flag with no extensions", "record", R.unsaved(flags: 0x02, extensions: [0x00]),
            .invalidValue)
        b.invalid("record: bool field byte 2", "record", R.unsaved(fields: [R.field("a", 0x04, [0x02])]), .invalidValue)
        b.invalid(
            "record: reference field repeats the record's zone", "record",
            R.unsaved(fields: [R.field("r", 0x07, R.str("t") + [0x02] + R.str("z") + R.str("o"))]), .invalidValue)
        b.invalid(
            "record: parent repeats the record's zone", "record",
            R.record(flags: 0x01, parent: R.str("p") + [0x02] + R.str("z") + R.str("o")), .invalidValue)
        // invalid_name
        b.invalid("record: record type starts with a digit", "record", R.unsaved(type: "1Note"), .invalidName, at: 1)
        b.invalid("record: empty record type", "record", R.unsaved(type: ""), .invalidName, at: 1)
        b.invalid("record: record type with a hyphen", "record", R.unsaved(type: "No-te"), .invalidName, at: 1)
        b.invalid("record: record type not ASCII", "record", R.unsaved(type: "Noté"), .invalidName, at: 1)
        b.invalid("record: record type starts with underscore", "record", R.unsaved(type: "_Note"), .invalidName, at: 1)
        b.invalid("record: empty record name", "record", R.record(name: [0x00]), .invalidName, at: 6)
        b.invalid("record: empty zone name", "record", R.record(zone: [0x00] + R.str("o")), .invalidName, at: 8)
        b.invalid("record: empty zone owner", "record", R.record(zone: R.str("z") + [0x00]), .invalidName, at: 10)
        b.invalid(
            "record: field name starts with underscore", "record", R.unsaved(fields: [R.field("_a", 0x04, [0])]),
            .invalidName)
        b.invalid(
            "record: field name with a space", "record", R.unsaved(fields: [R.field("a b", 0x04, [0])]), .invalidName)
        b.invalid("record: field name not ASCII", "record", R.unsaved(fields: [R.field("é", 0x04, [0])]), .invalidName)
        b.invalid(
            "record: empty field name", "record", R.unsaved(fields: [R.field("", 0x04, [0]) + [0x00]]), .invalidName)
        // limit_exceeded
        b.invalid(
            "record: record type of 256 bytes (maxNameBytes)", "record",
            R.unsaved(type: "N" + String(repeating: "a", count: 255)), .limitExceeded, at: 1)
        b.invalid(
            "record: record name of 256 bytes (maxNameBytes)", "record",
            R.record(name: R.str(String(repeating: "é", count: 128))), .limitExceeded, at: 6)
        b.invalid(
            "record: zone owner of 256 bytes (maxNameBytes)", "record",
            R.record(zone: R.str("z") + R.str(String(repeating: "🐟", count: 64))), .limitExceeded, at: 10)
        b.invalid(
            "record: field name of 256 bytes (maxFieldNameBytes)", "record",
            R.unsaved(fields: [R.field("f" + String(repeating: "0", count: 255), 0x04, [0])]), .limitExceeded)
        b.invalid("record: 1025 fields (maxFieldCount)", "record", R.record(fieldCount: R.varint(1025)), .limitExceeded)
        b.invalid(
            "record: 4097 vector entries (maxVectorEntries)", "record", R.record(vector: R.varint(4097)), .limitExceeded
        )
        b.invalid(
            "record: list field of 65537 elements (maxListCount)", "record",
            R.unsaved(fields: [R.field("a", 0x44, R.varint(65537))]), .limitExceeded)
        b.invalid(
            "record: 1025 extensions (maxFieldCount)", "record", R.unsaved(flags: 0x02, extensions: R.varint(1025)),
            .limitExceeded)
    }

    static func invalidDeltas(_ b: inout VectorBuilder) {
        typealias R = Raw
        let set = { (name: String) in R.field(name, 0x04, [0x01]) }
        // truncated
        b.invalid("delta: empty input", "delta", [], .truncated, at: 0)
        b.invalid("delta: base tag of 2 bytes", "delta", [0x00, 0x01, 0x02], .truncated, at: 1)
        b.invalid("delta: no operation count", "delta", [0x00] + R.u32(1), .truncated, at: 5)
        b.invalid(
            "delta: system fields cut after the record type", "delta", [0x01] + R.u32(1) + R.str("Note"), .truncated,
            at: 10)
        b.invalid(
            "delta: splice insert cut short", "delta",
            R.delta(ops: [R.str("t") + [0x3E, 0x01, 0x01, 0x00, 0x00, 0x01]]), .truncated)
        // overlong / overflow / utf8 / trailing
        b.invalid(
            "delta: operation count as two bytes", "delta", R.delta(opCount: [0x80, 0x00]), .overlongVarint, at: 5)
        b.invalid(
            "delta: splice offset as two bytes", "delta",
            R.delta(ops: [R.str("t") + [0x3E, 0x01, 0x01, 0x81, 0x00, 0x00, 0x00]]), .overlongVarint)
        b.invalid(
            "delta: patch offset of 65 bits", "delta",
            R.delta(ops: [R.str("b") + [0x3F, 0x05, 0x01] + [UInt8](repeating: 0xFF, count: 9) + [0x02, 0x00, 0x00]]),
            .varintOverflow)
        b.invalid(
            "delta: set string not UTF-8", "delta", R.delta(ops: [R.field("s", 0x01, [0x01, 0xC3])]), .invalidUTF8)
        b.invalid("delta: a byte after the delta", "delta", R.delta() + [0x00], .trailingBytes, at: 6)
        // unsorted / duplicate
        b.invalid("delta: operations out of order", "delta", R.delta(ops: [set("b"), set("a")]), .unsorted)
        b.invalid(
            "delta: two operations on one field", "delta", R.delta(ops: [set("a"), R.field("a", 0x3D)]), .duplicate,
            at: 10)
        // Concurrent slots (§7.3): only stamped sets repeat a name, the later stamp first. System
        // fields of writers A (entry 0, h0) and B (entry 1, h1 > h0).
        let h0 = SpecFixtures.hlc(0).rawValue, h1 = SpecFixtures.hlc(1_000).rawValue
        let twoWriters =
            R.str("Note") + [0, 0x02] + R.entry(SpecFixtures.a, h0, 1) + R.entry(SpecFixtures.b, h1, 1) + [0, 0] + [0]
        let setByA = R.field("t", 0x84, [0x00, 0x00, 0x01]), setByB = R.field("t", 0x84, [0x01, 0x00, 0x00])
        func concurrent(_ first: [UInt8], _ second: [UInt8]) -> (bytes: [UInt8], at: Int) {
            let bytes = R.delta(flags: 1, system: twoWriters, ops: [first, second])
            return (bytes, bytes.count - second.count)
        }
        var c = concurrent(setByA, setByB)
        b.invalid("delta: two stamped sets on one field, the earlier first", "delta", c.bytes, .unsorted, at: c.at)
        c = concurrent(setByB, setByB)
        b.invalid("delta: two sets on one field with equal stamps", "delta", c.bytes, .duplicate, at: c.at)
        // A string list set by B, then a splice of it by A: the later first, but a splice.
        c = concurrent(
            R.field("t", 0xC1, [0x01, 0x00, 0x01] + R.str("x")),
            R.str("t") + [0xBE, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01] + R.str("y"))
        b.invalid("delta: a set then a splice on one field", "delta", c.bytes, .duplicate, at: c.at)
        b.invalid(
            "delta: splices touch (one edit written as two)", "delta",
            R.delta(ops: [R.str("t") + [0x3E, 0x02, 0x02, 0x00, 0x01, 0x00, 0x01, 0x01, 0x00]]), .unsorted)
        b.invalid(
            "delta: splices out of order", "delta",
            R.delta(ops: [R.str("t") + [0x3E, 0x02, 0x02, 0x05, 0x00, 0x01, 0x01, 0x02, 0x01, 0x00]]), .unsorted)
        b.invalid(
            "delta: patches overlap", "delta",
            R.delta(ops: [R.str("b") + [0x3F, 0x05, 0x02, 0x00, 0x04, 0x00, 0x02, 0x01, 0x00]]), .unsorted)
        b.invalid(
            "delta: system extension tags out of order", "delta",
            R.delta(
                flags: 1, system: R.str("Note") + [0] + R.oneWriter + [0, 0] + [0x01, 0x02, 0x03, 0x00, 0x01, 0x00]),
            .unsorted)
        // unknown_required_tag
        b.invalid("delta: flags set reserved bit 1", "delta", R.delta(flags: 0x02), .unknownRequiredTag, at: 0)
        b.invalid("delta: operation tag 0x3c", "delta", R.delta(ops: [R.field("a", 0x3C)]), .unknownRequiredTag, at: 8)
        b.invalid(
            "delta: operation tag 0x40 (list of kind 0)", "delta", R.delta(ops: [R.field("a", 0x40, [0x00])]),
            .unknownRequiredTag, at: 8)
        b.invalid(
            "delta: splice element kind 0", "delta", R.delta(ops: [R.str("t") + [0x3E, 0x00, 0x01, 0x00, 0x01, 0x00]]),
            .unknownRequiredTag)
        b.invalid(
            "delta: splice element kind 0x41 (a list)", "delta",
            R.delta(ops: [R.str("t") + [0x3E, 0x41, 0x01, 0x00, 0x01, 0x00]]), .unknownRequiredTag)
        b.invalid(
            "delta: patch target kind 1 (it is always 5)", "delta",
            R.delta(ops: [R.str("b") + [0x3F, 0x01, 0x01, 0x00, 0x00, 0x01, 0x61]]), .unknownRequiredTag)
        b.invalid(
            "delta: required (even) system extension tag", "delta",
            R.delta(flags: 1, system: R.str("Note") + [0] + R.oneWriter + [0, 0] + [0x01, 0x01, 0x04, 0x00]),
            .unknownRequiredTag)
        // invalid_value
        b.invalid(
            "delta: parent flag 2", "delta", R.delta(flags: 1, system: R.str("Note") + [0x02]), .invalidValue, at: 10)
        b.invalid(
            "delta: extensions flag 2", "delta",
            R.delta(flags: 1, system: R.str("Note") + [0] + R.oneWriter + [0, 0] + [0x02]), .invalidValue)
        b.invalid(
            "delta: extensions flag with an empty list", "delta",
            R.delta(flags: 1, system: R.str("Note") + [0] + R.oneWriter + [0, 0] + [0x01, 0x00]), .invalidValue)
        b.invalid(
            "delta: system vector without a head", "delta",
            R.delta(flags: 1, system: R.str("Note") + [0, 0x01] + R.entry(SpecFixtures.a, 5, 0) + [0, 0, 0]),
            .invalidValue, at: 11)
        b.invalid(
            "delta: stamped operation without system fields", "delta",
            R.delta(ops: [R.field("a", 0x84, [0x00, 0x00, 0x01])]), .invalidValue)
        b.invalid(
            "delta: stamped drop", "delta",
            R.delta(flags: 1, system: R.system, ops: [R.field("a", 0xBD, [0x00, 0x00])]), .invalidValue)
        b.invalid(
            "delta: stamp names a node the vector lacks", "delta",
            R.delta(flags: 1, system: R.system, ops: [R.field("a", 0x84, [0x01, 0x00, 0x01])]), .invalidValue)
        b.invalid(
            "delta: splice without edits", "delta", R.delta(ops: [R.str("t") + [0x3E, 0x01, 0x00]]), .invalidValue)
        b.invalid(
            "delta: splice edit that changes nothing", "delta",
            R.delta(ops: [R.str("t") + [0x3E, 0x01, 0x01, 0x03, 0x00, 0x00]]), .invalidValue)
        b.invalid("delta: patch without edits", "delta", R.delta(ops: [R.str("b") + [0x3F, 0x05, 0x00]]), .invalidValue)
        b.invalid(
            "delta: patch edit that changes nothing", "delta",
            R.delta(ops: [R.str("b") + [0x3F, 0x05, 0x01, 0x07, 0x00, 0x00]]), .invalidValue)
        // invalid_name / limit_exceeded
        b.invalid(
            "delta: operation field name starts with a digit", "delta", R.delta(ops: [set("9a")]), .invalidName, at: 6)
        b.invalid(
            "delta: system record type empty", "delta", R.delta(flags: 1, system: R.str("") + [0]), .invalidName, at: 5)
        b.invalid(
            "delta: 4097 operations (maxDeltaOperations)", "delta", R.delta(opCount: R.varint(4097)), .limitExceeded,
            at: 5)
        b.invalid(
            "delta: splice of 65537 edits (maxListCount)", "delta",
            R.delta(ops: [R.str("t") + [0x3E, 0x01] + R.varint(65537)]), .limitExceeded)
        b.invalid(
            "delta: patch of 4097 edits (maxDeltaOperations)", "delta",
            R.delta(ops: [R.str("b") + [0x3F, 0x05] + R.varint(4097)]), .limitExceeded)
        b.invalid(
            "delta: patch offset above maxRecordBytes", "delta",
            R.delta(ops: [R.str("b") + [0x3F, 0x05, 0x01] + R.varint(1 << 20 + 1) + [0x00, 0x01, 0x61]]), .limitExceeded
        )
    }

    static func invalidTombstones(_ b: inout VectorBuilder) {
        typealias R = Raw
        let a = SpecFixtures.a, bb = SpecFixtures.b
        let h0 = SpecFixtures.hlc(0).rawValue
        let valid = R.tombstone()
        b.invalid("tombstone: empty input", "tombstone", [], .truncated, at: 0)
        b.invalid(
            "tombstone: no deletion stamp", "tombstone", Array(valid.dropLast(2)), .truncated, at: valid.count - 2)
        b.invalid("tombstone: a byte after the tombstone", "tombstone", valid + [0x00], .trailingBytes, at: valid.count)
        b.invalid(
            "tombstone: deletion index as two bytes", "tombstone", R.tombstone(deletion: [0x80, 0x00, 0x00]),
            .overlongVarint, at: valid.count - 2)
        b.invalid(
            "tombstone: deletion offset of 65 bits", "tombstone",
            R.tombstone(deletion: [0x00] + [UInt8](repeating: 0xFF, count: 10)), .varintOverflow, at: valid.count - 1)
        b.invalid("tombstone: record name not UTF-8", "tombstone", R.tombstone(name: [0x01, 0xC0]), .invalidUTF8, at: 5)
        b.invalid("tombstone: empty vector", "tombstone", R.tombstone(vector: [0x00]), .invalidValue, at: 11)
        b.invalid(
            "tombstone: vector nodes out of order", "tombstone",
            R.tombstone(vector: [0x02] + R.node(bb) + R.u64(h0) + R.node(a) + R.u64(h0)), .unsorted, at: 36)
        b.invalid(
            "tombstone: vector node twice", "tombstone",
            R.tombstone(vector: [0x02] + R.node(a) + R.u64(h0) + R.node(a) + R.u64(h0 + 1)), .duplicate, at: 36)
        b.invalid(
            "tombstone: zero vector entry", "tombstone", R.tombstone(vector: [0x01] + R.node(a) + R.u64(0)),
            .invalidValue, at: 28)
        b.invalid(
            "tombstone: deletion names node index 1 of 1", "tombstone", R.tombstone(deletion: [0x01, 0x00]),
            .invalidValue, at: valid.count - 2)
        b.invalid(
            "tombstone: deletion at timestamp zero", "tombstone", R.tombstone(deletion: [0x00] + R.varint(h0)),
            .invalidValue, at: valid.count - 1)
        b.invalid("tombstone: record type with a dot", "tombstone", R.tombstone(type: "a.b"), .invalidName, at: 0)
        b.invalid("tombstone: empty record name", "tombstone", R.tombstone(name: [0x00]), .invalidName, at: 5)
        b.invalid(
            "tombstone: 4097 vector entries (maxVectorEntries)", "tombstone", R.tombstone(vector: R.varint(4097)),
            .limitExceeded, at: 11)
    }

    static func invalidTokens(_ b: inout VectorBuilder) {
        typealias R = Raw
        let a = SpecFixtures.a, bb = SpecFixtures.b
        let valid = R.token()
        b.invalid("token: empty input", "token", [], .truncated, at: 0)
        b.invalid("token: one byte", "token", [0x53], .truncated, at: 1)
        b.invalid("token: incarnation cut short", "token", Array(valid.prefix(12)), .truncated, at: 4)
        b.invalid("token: cursor without sequence", "token", R.token(cursor: [0x01] + R.node(a)), .truncated, at: 38)
        b.invalid("token: magic \"SX\"", "token", R.token(magic: [0x53, 0x58, 0x01]), .badMagic, at: 0)
        b.invalid("token: magic \"TS\"", "token", R.token(magic: [0x54, 0x53, 0x01]), .badMagic, at: 0)
        b.invalid("token: a record is not a token", "token", R.unsaved(), .badMagic, at: 0)
        b.invalid("token: version 2", "token", R.token(magic: [0x53, 0x54, 0x02]), .unsupportedVersion, at: 2)
        b.invalid("token: version 0", "token", R.token(magic: [0x53, 0x54, 0x00]), .unsupportedVersion, at: 2)
        b.invalid("token: kind 0", "token", R.token(kind: 0), .unknownRequiredTag, at: 3)
        b.invalid("token: kind 3", "token", R.token(kind: 3), .unknownRequiredTag, at: 3)
        b.invalid("token: cursor flag 2", "token", R.token(cursor: [0x02]), .invalidValue, at: 21)
        b.invalid("token: a byte after the token", "token", valid + [0x00], .trailingBytes, at: valid.count)
        b.invalid(
            "token: vector nodes out of order", "token",
            R.token(vector: [0x02] + R.node(bb) + R.u64(5) + R.node(a) + R.u64(5)), .unsorted, at: 45)
        b.invalid(
            "token: vector node twice", "token", R.token(vector: [0x02] + R.node(a) + R.u64(5) + R.node(a) + R.u64(6)),
            .duplicate, at: 45)
        b.invalid(
            "token: zero vector entry", "token", R.token(vector: [0x01] + R.node(a) + R.u64(0)), .invalidValue, at: 37)
        b.invalid("token: vector count as two bytes", "token", R.token(vector: [0x80, 0x00]), .overlongVarint, at: 20)
        b.invalid(
            "token: cursor sequence of 65 bits", "token",
            R.token(cursor: [0x01] + R.node(a) + [UInt8](repeating: 0xFF, count: 9) + [0x02]), .varintOverflow, at: 38)
        b.invalid(
            "token: 4097 vector entries (maxVectorEntries)", "token", R.token(vector: R.varint(4097)), .limitExceeded,
            at: 20)
    }
}
