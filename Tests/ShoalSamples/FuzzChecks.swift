// FuzzChecks: what every fuzz target asserts about a decoder, shared by libFuzzer and `swift test`.

package import ShoalWire

/// The properties the `Fuzz/` targets check for every input, as plain functions so that the
/// main package's tests replay the committed corpora and crash regressions through exactly the
/// same code, without sanitizers.
///
/// For any input a decoder must either throw a ``WireError`` whose offset lies inside the input,
/// or return a value that re-encodes to the very same bytes (canonical form) and decodes again
/// to an equal value. A check returns normally when that holds and throws ``Failure`` when it
/// does not; a fuzz target turns the failure into a crash.
package enum FuzzChecks {
    /// A property a decoder broke: a real bug, with what was expected and what happened.
    package struct Failure: Error, CustomStringConvertible {
        /// The target whose check failed, e.g. `fuzz-record`.
        package let target: String
        /// What went wrong.
        package let message: String

        /// Creates a failure.
        package init(_ target: String, _ message: String) {
            self.target = target
            self.message = message
        }

        package var description: String { "\(target): \(message)" }
    }

    /// The fuzz targets, named as the executables and the `Fuzz/Corpus/<target>` directories.
    package enum Target: String, CaseIterable, Sendable {
        case frameStream = "fuzz-frame-stream"
        case frame = "fuzz-frame"
        case record = "fuzz-record"
        case delta = "fuzz-delta"
        case tombstone = "fuzz-tombstone"
        case token = "fuzz-token"
        case control = "fuzz-control"
        case compressed = "fuzz-compressed"
        case messages = "fuzz-messages"
        case segment = "fuzz-segment"
        case discovery = "fuzz-discovery"
        case compressedStream = "fuzz-stream"
        case cABI = "fuzz-c-abi"

        /// Runs this target's check on one input.
        /// - Throws: ``Failure`` when the decoder broke a property.
        package func check(_ bytes: [UInt8]) throws(Failure) {
            switch self {
            case .frameStream: try FuzzChecks.frameStream(bytes)
            case .frame: try FuzzChecks.frame(bytes)
            case .record: try FuzzChecks.record(bytes)
            case .delta: try FuzzChecks.delta(bytes)
            case .tombstone: try FuzzChecks.tombstone(bytes)
            case .token: try FuzzChecks.token(bytes)
            case .control: try FuzzChecks.control(bytes)
            case .compressed: try FuzzChecks.compressed(bytes)
            case .messages: try FuzzChecks.messages(bytes)
            case .segment: try FuzzChecks.segment(bytes)
            case .discovery: try FuzzChecks.discovery(bytes)
            case .compressedStream: try FuzzChecks.compressedStream(bytes)
            case .cABI: try FuzzChecks.cABI(bytes)
            }
        }
    }

    /// The zone `fuzz-delta` decodes deltas against (references into it are written short).
    package static let deltaZone = NotesCorpus.zone

    /// `Record(decoding:)`: canonical re-encoding, stable round trip, `encodedSize` agrees, the
    /// decoded record passes `validate()` under the same limits (the store skips validating
    /// records it is given with their received bytes, relying on this), and
    /// `versionVector(ofEncoded:)` reads the same vector without decoding the rest;
    /// `Record(systemFields:)` accepts exactly the records without field slots, and
    /// `encodedSystemFields()` gives their bytes back; `RecordView` reaches the decoder's verdict.
    /// - Throws: ``Failure`` when a property breaks.
    package static func record(_ bytes: [UInt8]) throws(Failure) {
        let t = Target.record.rawValue
        try recordView(t, bytes)
        let systemFields = try? Record(systemFields: bytes)
        guard let value = try decoded(t, bytes, { (b) throws(WireError) in try Record(decoding: b) }) else {
            if systemFields != nil {
                throw Failure(t, "Record(systemFields:) accepted bytes that Record(decoding:) refuses")
            }
            return
        }
        do throws(WireError) {
            try value.validate()
        } catch {
            throw Failure(t, "the record decoded but does not validate: \(error)")
        }
        guard (systemFields != nil) == value.fields.isEmpty else {
            throw Failure(
                t,
                "Record(systemFields:) \(systemFields == nil ? "refused" : "accepted") a record with \(value.fields.count) field slots"
            )
        }
        if let systemFields, systemFields != value || systemFields.encodedSystemFields() != bytes {
            throw Failure(
                t,
                "Record(systemFields:) decoded \(systemFields), which differs from the record or re-encodes to other bytes"
            )
        }
        let peeked = bytes.withUnsafeBytes { raw in try? Record.versionVector(ofEncoded: raw) }
        guard peeked == value.versionVector else {
            throw Failure(
                t,
                "versionVector(ofEncoded:) read \(peeked.map { "\($0)" } ?? "an error"), the record has \(value.versionVector)"
            )
        }
        guard value.encodedSize == bytes.count else {
            throw Failure(t, "encodedSize is \(value.encodedSize) but the record decoded from \(bytes.count) bytes")
        }
        try roundTrip(
            t, value, bytes, encode: { $0.encoded() }, decode: { (b) throws(WireError) in try Record(decoding: b) })
    }

    /// `RecordDelta(decoding:zone:)` against ``deltaZone``.
    /// - Throws: ``Failure`` when a property breaks.
    package static func delta(_ bytes: [UInt8]) throws(Failure) {
        let t = Target.delta.rawValue
        let decode = { (b: [UInt8]) throws(WireError) -> RecordDelta in try RecordDelta(decoding: b, zone: deltaZone) }
        guard let value = try decoded(t, bytes, decode) else { return }
        try roundTrip(t, value, bytes, encode: { $0.encoded(zone: deltaZone) }, decode: decode)
    }

    /// `Tombstone(decoding:)`.
    /// - Throws: ``Failure`` when a property breaks.
    package static func tombstone(_ bytes: [UInt8]) throws(Failure) {
        let t = Target.tombstone.rawValue
        let decode = { (b: [UInt8]) throws(WireError) -> Tombstone in try Tombstone(decoding: b) }
        guard let value = try decoded(t, bytes, decode) else { return }
        try roundTrip(t, value, bytes, encode: { $0.encoded() }, decode: decode)
    }

    /// `ChangeToken(bytes:).contents()`; re-encoding is `ChangeToken(contents).bytes`.
    /// - Throws: ``Failure`` when a property breaks.
    package static func token(_ bytes: [UInt8]) throws(Failure) {
        let t = Target.token.rawValue
        let decode = { (b: [UInt8]) throws(WireError) -> ChangeToken.Contents in try ChangeToken(bytes: b).contents() }
        guard let value = try decoded(t, bytes, decode) else { return }
        try roundTrip(t, value, bytes, encode: { ChangeToken($0).bytes }, decode: decode)
        guard ChangeToken(text: ChangeToken(bytes: bytes).description)?.bytes == bytes else {
            throw Failure(t, "the token's base64url text form does not parse back to the same bytes")
        }
    }

    /// `DiscoveryAnnouncement(decoding:)`: what decodes fits the packet limit, lists 1–16 sorted
    /// endpoints and re-encodes to the same bytes.
    /// - Throws: ``Failure`` when a property breaks.
    package static func discovery(_ bytes: [UInt8]) throws(Failure) {
        let t = Target.discovery.rawValue
        let decode = { (b: [UInt8]) throws(WireError) -> DiscoveryAnnouncement in try DiscoveryAnnouncement(decoding: b)
        }
        guard let value = try decoded(t, bytes, decode) else { return }
        guard bytes.count <= DiscoveryAnnouncement.maxBytes,
            (1...DiscoveryAnnouncement.maxEndpoints).contains(value.endpoints.count),
            value.endpoints == value.endpoints.sorted()
        else {
            throw Failure(
                t, "an announcement of \(bytes.count) bytes with \(value.endpoints.count) endpoints decoded: \(value)")
        }
        try roundTrip(t, value, bytes, encode: { $0.encoded() }, decode: decode)
    }

    /// The control payloads: the same bytes as an error, a ping and a goodbye payload.
    /// - Throws: ``Failure`` when a property breaks.
    package static func control(_ bytes: [UInt8]) throws(Failure) {
        let t = Target.control.rawValue
        let error = { (b: [UInt8]) throws(WireError) -> ErrorMessage in try ErrorMessage(decoding: b) }
        if let value = try decoded(t, bytes, error) {
            try roundTrip(t, value, bytes, encode: { $0.encoded() }, decode: error)
        }
        let ping = { (b: [UInt8]) throws(WireError) -> PingMessage in try PingMessage(decoding: b) }
        if let value = try decoded(t, bytes, ping) {
            try roundTrip(t, value, bytes, encode: { $0.encoded() }, decode: ping)
        }
        let goodbye = { (b: [UInt8]) throws(WireError) -> GoodbyeMessage in try GoodbyeMessage(decoding: b) }
        if let value = try decoded(t, bytes, goodbye) {
            try roundTrip(t, value, bytes, encode: { $0.encoded() }, decode: goodbye)
        }
    }

    /// The stated knowledge live changes are decoded against (the one of Spec/vectors/README.md,
    /// so the `liveChanges` vectors are seeds as they are).
    package static let liveReference = VersionVector([
        (
            NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111),
            HLC(milliseconds: 1_790_000_000_000, logical: 0)
        ),
        (
            NodeID(high: 0x0B0B_0000_0000_0002, low: 0x2222_2222_2222_2222),
            HLC(milliseconds: 1_790_000_000_100, logical: 0)
        )
    ])

    /// The replication messages (Spec/replication.md §3): the first byte picks the kind (modulo
    /// 11: hello, zones, subscribe, acknowledgement, changes, asset request, asset chunk, a zone
    /// share alone, as announcements carry it, upstreams, live changes decoded in zone `notes`
    /// against ``liveReference`` with ``LiveChangesMessage/subscription(of:limits:)`` agreeing,
    /// and want-whole), the rest is the payload.
    /// - Throws: ``Failure`` when a property breaks.
    package static func messages(_ bytes: [UInt8]) throws(Failure) {
        let t = Target.messages.rawValue
        guard let selector = bytes.first else { return }
        let payload = Array(bytes.dropFirst())
        switch selector % 11 {
        case 0: try message(t, payload, { (b) throws(WireError) in try HelloMessage(decoding: b) }, { $0.encoded() })
        case 1: try message(t, payload, { (b) throws(WireError) in try ZonesMessage(decoding: b) }, { $0.encoded() })
        case 2:
            try message(t, payload, { (b) throws(WireError) in try SubscribeMessage(decoding: b) }, { $0.encoded() })
        case 3:
            try message(
                t, payload, { (b) throws(WireError) in try AcknowledgementMessage(decoding: b) }, { $0.encoded() })
        case 4: try message(t, payload, { (b) throws(WireError) in try ChangesMessage(decoding: b) }, { $0.encoded() })
        case 5:
            try message(t, payload, { (b) throws(WireError) in try AssetRequestMessage(decoding: b) }, { $0.encoded() })
        case 6:
            try message(t, payload, { (b) throws(WireError) in try AssetChunkMessage(decoding: b) }, { $0.encoded() })
        case 7: try message(t, payload, { (b) throws(WireError) in try ZoneShare(decoding: b) }, { $0.encoded() })
        case 8:
            try message(
                t, payload, { (b) throws(WireError) -> UpstreamsMessage in try UpstreamsMessage(decoding: b) },
                { (m: UpstreamsMessage) in m.encoded() })
        case 10:
            try message(
                t, payload, { (b) throws(WireError) -> WantWholeMessage in try WantWholeMessage(decoding: b) },
                { (m: WantWholeMessage) in m.encoded() })
        default:
            let decode = { (b: [UInt8]) throws(WireError) -> LiveChangesMessage in
                try LiveChangesMessage(decoding: b, zone: NotesCorpus.zone, reference: liveReference)
            }
            try message(t, payload, decode, { (m: LiveChangesMessage) in m.encoded() })
            if let m = try? decode(payload), (try? LiveChangesMessage.subscription(of: payload)) != m.subscription {
                throw Failure(t, "subscription(of:) disagrees with the decoded live changes message")
            }
        }
    }

    static func message<T: Equatable>(
        _ t: String, _ payload: [UInt8], _ decode: ([UInt8]) throws(WireError) -> T, _ encode: (T) -> [UInt8]
    ) throws(Failure) {
        guard let value = try decoded(t, payload, decode) else { return }
        try roundTrip(t, value, payload, encode: encode, decode: decode)
    }

    /// Decodes `bytes`; nil when the decoder rejected them with an error located inside them.
    /// - Throws: ``Failure`` when the error's offset lies outside the input.
    /// `RecordView.withView(of:)` refuses what the decoder refuses, with the same error, and
    /// reads the decoded record's slots (name, value, stamp) from what it accepts.
    static func recordView(_ t: String, _ bytes: [UInt8]) throws(Failure) {
        let decoded: Result<Record, WireError> = Result { () throws(WireError) in try Record(decoding: bytes) }
        let viewed: Result<[Record.Field], any Error> = Result {
            try RecordView.withView(of: bytes) { view in
                (0..<view.slotCount).map { i in
                    let slot = view.slot(at: i)
                    return Record.Field(name: slot.name, value: slot.value, stamp: slot.stamp)
                }
            }
        }
        switch (decoded, viewed) {
        case (.success(let record), .success(let fields)):
            guard fields == record.fields else { throw Failure(t, "RecordView read other slots than the decoder") }
            for f in record.fields
            where RecordView.field(in: bytes, named: f.name) != record.slots(for: f.name).first?.value {
                throw Failure(t, "RecordView.field(named: \(f.name)) differs from the decoded record")
            }
        case (.failure(let d), .failure(let v as WireError)):
            guard d.code == v.code, d.offset == v.offset else {
                throw Failure(t, "RecordView says \(v), the decoder \(d)")
            }
        default:
            throw Failure(t, "RecordView and the decoder disagree: \(decoded) against \(viewed)")
        }
    }

    static func decoded<T>(_ target: String, _ bytes: [UInt8], _ decode: ([UInt8]) throws(WireError) -> T)
        throws(Failure) -> T?
    {
        do {
            return try decode(bytes)
        } catch {
            try checkOffset(target, error, inputCount: bytes.count)
            return nil
        }
    }

    /// An error's offset counts from the start of the input, so it is in `0...inputCount`.
    static func checkOffset(_ target: String, _ error: WireError, inputCount: Int) throws(Failure) {
        guard error.offset >= 0, error.offset <= inputCount else {
            throw Failure(target, "error offset \(error.offset) is outside the \(inputCount)-byte input: \(error)")
        }
    }

    /// `value` came from `bytes`: it must encode to `bytes` and decode from them to itself.
    static func roundTrip<T: Equatable>(
        _ target: String, _ value: T, _ bytes: [UInt8],
        encode: (T) -> [UInt8], decode: ([UInt8]) throws(WireError) -> T
    ) throws(Failure) {
        let again = encode(value)
        guard again == bytes else {
            throw Failure(
                target,
                "not canonical: \(bytes.count) input bytes decode to a value that re-encodes to \(again.count) different bytes\n  input:   \(hex(bytes))\n  encoded: \(hex(again))\n  value:   \(value)"
            )
        }
        let back: T
        do {
            back = try decode(again)
        } catch {
            throw Failure(target, "the re-encoded bytes no longer decode: \(error)")
        }
        guard back == value else {
            throw Failure(
                target, "decoding the re-encoded bytes gives a different value\n  first:  \(value)\n  second: \(back)")
        }
    }

    /// At most the first 256 bytes in hex, for failure messages.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes.prefix(256) {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self) + (bytes.count > 256 ? "… (\(bytes.count) bytes)" : "")
    }
}

extension RecordView {
    /// The value of the field `name` of the record `bytes`, read through a view (nil on error).
    static func field(in bytes: [UInt8], named name: String) -> FieldValue? {
        (try? withView(of: bytes) { $0.field(named: name)?.value }) ?? nil
    }
}
