// CABIChecks: the fuzz-c-abi check — the C entry points of shoalwire.h, called as a C program
// calls them, on any bytes. FuzzChecks.cABI runs it in the tests; the fuzz-c-abi target compiles
// this file alone (a symbolic link) and links only libShoalWireC, so that the process holds one
// copy of the codec. Compiled where SHOAL_C_ABI is defined.

#if SHOAL_C_ABI
    import CShoalWire
    import ShoalWireC

    /// The properties fuzz-c-abi checks (see ``check(_:)``).
    enum CABIChecks {
        /// A broken property: what went wrong.
        struct Failure: Error, CustomStringConvertible {
            let description: String
            init(_ target: String, _ message: String) { description = "\(target): \(message)" }
        }

        /// The message kinds, in the order the selector byte picks them (fuzz-c-abi).
        static let cMessageKinds = [
            "hello", "zones", "subscribe", "acknowledgement", "changes", "liveChanges",
            "assetRequest", "assetChunk", "upstreams", "wantWhole"
        ]

        /// The control payload kinds, in the order the selector byte picks them (fuzz-c-abi).
        static let cControlKinds = ["error_message", "ping", "goodbye"]

        /// The C interface (shoalwire.h). The first byte picks the entry point (modulo 11): record,
        /// tombstone, token, delta (zone `notes`), value, message (the second byte picks the kind,
        /// modulo 10), frame reader (stream compression accepted; fed in pieces whose sizes come from
        /// the bytes), inspect, control payload (the second byte picks the kind, modulo 3),
        /// discovery announcement and device ID text; the rest is the input. Every call returns a
        /// status; a failure names a Spec code with an offset inside the input; a decoder that
        /// accepts hands back JSON that its encoder turns back into the very same bytes; the input,
        /// read as JSON text, never crashes the encoder; a device ID text that parses gives bytes
        /// whose text parses to them again. Everything handed back is freed (ASan reports leaks).
        /// - Throws: ``Failure`` when a property breaks.
        static func check(_ bytes: [UInt8]) throws(Failure) {
            let t = "fuzz-c-abi"
            guard let selector = bytes.first else { return }
            var input = Array(bytes.dropFirst())
            var kind = ""
            if selector % 11 == 5 || selector % 11 == 8 {
                guard let k = input.first else { return }
                kind =
                    selector % 11 == 5
                    ? cMessageKinds[Int(k) % cMessageKinds.count] : cControlKinds[Int(k) % cControlKinds.count]
                input.removeFirst()
            }
            switch selector % 11 {
            case 6: try cFrames(t, input)
            case 10: try cDeviceID(t, input)
            case 7:
                var json: UnsafeMutablePointer<CChar>? = nil
                var err = shoal_error()
                let rc = input.withUnsafeBufferPointer {
                    shoalInspectJSON($0.baseAddress, $0.count, nil, nil, &json, &err)
                }
                try cStatus(t, rc, err, input.count, produced: json != nil)
                shoal_free(json)
            default:
                try cCodec(t, Int(selector % 11), kind, input)
            }
        }

        /// A device ID: the input as text parsed, and when it parses, its bytes' text parsed back to
        /// them; the input as bytes (any count) given a text, which parses back to them.
        static func cDeviceID(_ t: String, _ input: [UInt8]) throws(Failure) {
            let text = input.map { CChar(bitPattern: $0 == 0 ? 0x20 : $0) } + [0]
            var out: UnsafeMutablePointer<UInt8>? = nil
            var length = 0
            var err = shoal_error()
            let rc = shoalDeviceIDFromText(text, &out, &length, &err)
            try cStatus(t, rc, err, input.count, produced: out != nil)
            let parsed = out.map { Array(UnsafeBufferPointer(start: $0, count: length)) }
            shoal_free(out)
            for bytes in [parsed, input].compactMap({ $0 }) {
                var back: UnsafeMutablePointer<CChar>? = nil
                let status = bytes.withUnsafeBufferPointer {
                    shoalDeviceIDToText($0.baseAddress, $0.count, &back, &err)
                }
                try cStatus(t, status, err, bytes.count, produced: back != nil)
                defer { shoal_free(back) }
                guard status == 0, let back else {
                    guard bytes.count != 32 else {
                        throw Failure(t, "32 bytes have no device ID text: status \(status)")
                    }
                    continue
                }
                var again: UnsafeMutablePointer<UInt8>? = nil
                let rc2 = shoalDeviceIDFromText(back, &again, &length, &err)
                let round = again.map { Array(UnsafeBufferPointer(start: $0, count: length)) }
                shoal_free(again)
                guard rc2 == 0, round == bytes else {
                    throw Failure(t, "the text \(String(cString: back)) does not parse back to its bytes")
                }
            }
        }

        /// One decoder and its encoder: decode, and when it accepts, encode the JSON it gave.
        static func cCodec(_ t: String, _ which: Int, _ kind: String, _ input: [UInt8]) throws(Failure) {
            var json: UnsafeMutablePointer<CChar>? = nil
            var err = shoal_error()
            let rc: Int32 = input.withUnsafeBufferPointer { b in
                switch which {
                case 0: return shoalRecordDecodeJSON(b.baseAddress, b.count, &json, &err)
                case 1: return shoalTombstoneDecodeJSON(b.baseAddress, b.count, &json, &err)
                case 2: return shoalTokenDecodeJSON(b.baseAddress, b.count, &json, &err)
                case 3: return shoalDeltaDecodeJSON(b.baseAddress, b.count, nil, &json, &err)
                case 4: return shoalValueDecodeJSON(b.baseAddress, b.count, nil, &json, &err)
                case 8: return kind.withCString { shoalControlDecodeJSON($0, b.baseAddress, b.count, &json, &err) }
                case 9: return shoalDiscoveryDecodeJSON(b.baseAddress, b.count, &json, &err)
                default:
                    return kind.withCString { shoalMessageDecodeJSON($0, b.baseAddress, b.count, nil, &json, &err) }
                }
            }
            defer { shoal_free(json) }
            try cStatus(t, rc, err, input.count, produced: json != nil)
            // The input as JSON text: any outcome but a crash.
            let text = input.map { CChar(bitPattern: $0 == 0 ? 0x20 : $0) } + [0]
            try cEncode(which, kind, text) { (_: Int32, _: [UInt8]) throws(Failure) in }
            guard rc == 0, let json else { return }
            try cEncode(which, kind, json) { (status: Int32, encoded: [UInt8]) throws(Failure) in
                guard status == 0, encoded == input else {
                    throw Failure(
                        t,
                        "decoded JSON \(String(cString: json)) encodes to \(status == 0 ? "\(encoded.count) other bytes" : "status \(status)") instead of the \(input.count) input bytes"
                    )
                }
            }
        }

        /// Calls the encoder `which` on JSON text and hands its status and bytes to `check`.
        static func cEncode(
            _ which: Int, _ kind: String, _ json: UnsafePointer<CChar>,
            _ check: (Int32, [UInt8]) throws(Failure) -> Void
        ) throws(Failure) {
            var out: UnsafeMutablePointer<UInt8>? = nil
            var length = 0
            var err = shoal_error()
            let rc: Int32
            switch which {
            case 0: rc = shoalRecordEncodeJSON(json, &out, &length, &err)
            case 1: rc = shoalTombstoneEncodeJSON(json, &out, &length, &err)
            case 2: rc = shoalTokenEncodeJSON(json, &out, &length, &err)
            case 3: rc = shoalDeltaEncodeJSON(json, nil, &out, &length, &err)
            case 4: rc = shoalValueEncodeJSON(json, nil, &out, &length, &err)
            case 8: rc = kind.withCString { shoalControlEncodeJSON($0, json, &out, &length, &err) }
            case 9: rc = shoalDiscoveryEncodeJSON(json, &out, &length, &err)
            default: rc = kind.withCString { shoalMessageEncodeJSON($0, json, nil, &out, &length, &err) }
            }
            let bytes = out.map { Array(UnsafeBufferPointer(start: $0, count: length)) } ?? []
            shoal_free(out)
            try check(rc, bytes)
        }

        /// A status and its error agree: 0 with a result, or a code, its name and nothing handed back.
        static func cStatus(_ t: String, _ rc: Int32, _ err: shoal_error, _ count: Int, produced: Bool) throws(Failure)
        {
            if rc == 0 {
                guard produced, err.code == 0 else { throw Failure(t, "status 0 without a result, or with an error") }
                return
            }
            guard !produced, err.code == rc else {
                throw Failure(t, "status \(rc) with a result, or with error code \(err.code)")
            }
            guard rc == 100 || (err.offset <= count) else {
                throw Failure(t, "error offset \(err.offset) is past the \(count) input bytes")
            }
        }

        /// The frame reader, fed in pieces: every frame or the error comes out, nothing else.
        static func cFrames(_ t: String, _ input: [UInt8]) throws(Failure) {
            guard let reader = shoalFrameReaderNew(0, 1) else { throw Failure(t, "no reader with the default limits") }
            defer { shoalFrameReaderFree(reader) }
            var at = 0, piece = 1
            var err = shoal_error()
            while at < input.count {
                let n = min(piece, input.count - at)
                let fed = input.withUnsafeBufferPointer { b in
                    shoalFrameReaderFeed(reader, b.baseAddress.map { $0 + at }, n, &err)
                }
                guard fed == 0 else { throw Failure(t, "feed refused bytes of a reader that had not failed") }
                at += n
                piece = piece * 3 % 1031 + 1
                var frame = shoal_frame()
                while true {
                    let rc = shoalFrameReaderNext(reader, &frame, &err)
                    if rc == 1 { shoal_free(frame.payload); continue }
                    if rc == 0 { break }
                    guard err.code != 0, err.offset <= input.count else {
                        throw Failure(t, "a reader error with code \(err.code) at \(err.offset)")
                    }
                    return
                }
            }
            guard shoalFrameReaderConsumed(reader) + shoalFrameReaderPending(reader) == input.count else {
                throw Failure(t, "consumed and pending bytes do not add up to the bytes fed")
            }
        }
    }
#endif
