// CBoundary: what every C entry point does at the boundary — check pointers, catch every error
// into the caller's shoal_error, hand results back in malloc'd memory.

import CShoalWire
import Foundation
import ShoalWire
import ShoalWireJSON

/// A C caller's mistake rather than the bytes': a NULL pointer, an unknown kind, bad JSON.
struct CArgumentError: Error {
    let detail: String
    init(_ detail: String) { self.detail = detail }
}

/// Pointer checks, error reporting and result hand-over shared by the `@_cdecl` functions.
enum CBoundary {
    /// The codes of shoalwire.h, by the Spec's name.
    static let codes: [String: Int32] = [
        "truncated": 1, "overlong_varint": 2, "varint_overflow": 3, "invalid_utf8": 4, "trailing_bytes": 5,
        "unsorted": 6, "duplicate": 7, "unknown_required_tag": 8, "invalid_value": 9, "invalid_name": 10,
        "limit_exceeded": 11, "bad_magic": 12, "unsupported_version": 13, "checksum_mismatch": 14,
        "decompression_failed": 15, "unknown_dictionary": 16
    ]
    static let other: Int32 = 99
    static let invalidArgument: Int32 = 100

    /// Runs `body`, turning whatever it throws into a status code and `*err`.
    static func run(_ err: UnsafeMutablePointer<shoal_error>?, _ body: () throws -> Void) -> Int32 {
        clear(err)
        do {
            try body()
            return 0
        } catch let e as WireError {
            return report(err, code: codes[e.code.name] ?? other, name: e.code.name, offset: max(e.offset, 0), e.detail)
        } catch let e as CArgumentError {
            return report(err, code: invalidArgument, name: "invalid_argument", offset: 0, e.detail)
        } catch let e as VectorJSONError {
            return report(
                err, code: invalidArgument, name: "invalid_argument", offset: 0,
                "JSON is not of the documented form: \(e.description)")
        } catch {
            return report(err, code: invalidArgument, name: "invalid_argument", offset: 0, "\(error)")
        }
    }

    static func clear(_ err: UnsafeMutablePointer<shoal_error>?) {
        guard let err else { return }
        err.pointee.code = 0
        err.pointee.offset = 0
        withUnsafeMutableBytes(of: &err.pointee.name) { copy("", into: $0) }
        withUnsafeMutableBytes(of: &err.pointee.message) { copy("", into: $0) }
    }

    @discardableResult
    static func report(
        _ err: UnsafeMutablePointer<shoal_error>?, code: Int32, name: String, offset: Int, _ message: String
    ) -> Int32 {
        guard let err else { return code }
        err.pointee.code = code
        err.pointee.offset = offset
        withUnsafeMutableBytes(of: &err.pointee.name) { copy(name, into: $0) }
        withUnsafeMutableBytes(of: &err.pointee.message) { copy(message, into: $0) }
        return code
    }

    /// Copies `text` into a fixed C array, NUL-terminated, cut at a character boundary to fit.
    static func copy(_ text: String, into buffer: UnsafeMutableRawBufferPointer) {
        guard buffer.count > 0 else { return }
        let utf8 = Array(text.utf8)
        var n = min(utf8.count, buffer.count &- 1)
        while n > 0, n < utf8.count, utf8[n] & 0xC0 == 0x80 { n &-= 1 }
        for i in 0..<n { buffer[i] = utf8[i] }
        buffer[n] = 0
    }

    /// The input bytes: NULL is allowed only for an empty input.
    static func input(_ bytes: UnsafePointer<UInt8>?, _ len: Int) throws -> UnsafeRawBufferPointer {
        guard len >= 0 else { throw CArgumentError("the length is over SSIZE_MAX") }
        if len == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
        guard let bytes else { throw CArgumentError("bytes is NULL but len is \(len)") }
        return UnsafeRawBufferPointer(start: bytes, count: len)
    }

    /// A required C string.
    static func string(_ text: UnsafePointer<CChar>?, _ what: String) throws -> String {
        guard let text else { throw CArgumentError("\(what) is NULL") }
        return String(cString: text)
    }

    /// A JSON document, parsed.
    static func json(_ text: UnsafePointer<CChar>?, _ what: String) throws -> Any {
        guard let text else { throw CArgumentError("\(what) is NULL") }
        let data = Data(bytes: text, count: strlen(text))
        do {
            return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw CArgumentError("\(what) is not JSON: \(error.localizedDescription)")
        }
    }

    /// An optional zone, `{"name", "owner"}`; nil gives `fallback`.
    static func zone(_ text: UnsafePointer<CChar>?, fallback: RecordZone.ID) throws -> RecordZone.ID {
        guard text != nil else { return fallback }
        return try VectorJSON.zone(try json(text, "zone_json"), "zone")
    }

    /// Checks that the out-pointers are there before any work, and clears them.
    static func prepare(_ text: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) throws {
        guard let text else { throw CArgumentError("the output pointer is NULL") }
        text.pointee = nil
    }

    static func prepare(_ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, _ len: UnsafeMutablePointer<Int>?)
        throws
    {
        guard let bytes, let len else { throw CArgumentError("an output pointer is NULL") }
        bytes.pointee = nil
        len.pointee = 0
    }

    /// Hands JSON text back in malloc'd memory.
    static func hand(json object: Any, to out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) throws {
        let data = try JSONSerialization.data(
            withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        try hand(text: Array(data), to: out)
    }

    static func hand(text utf8: [UInt8], to out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) throws {
        guard let out else { throw CArgumentError("the output pointer is NULL") }
        guard let p = malloc(utf8.count &+ 1)?.assumingMemoryBound(to: CChar.self) else {
            throw CArgumentError("out of memory")
        }
        utf8.withUnsafeBytes { src in
            if let base = src.baseAddress { memcpy(p, base, src.count) }
        }
        p[utf8.count] = 0
        out.pointee = p
    }

    /// Hands bytes back in malloc'd memory (one byte is allocated for an empty result).
    static func hand(
        bytes: [UInt8], to out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, length: UnsafeMutablePointer<Int>?
    ) throws {
        guard let out, let length else { throw CArgumentError("an output pointer is NULL") }
        guard let p = malloc(max(bytes.count, 1))?.assumingMemoryBound(to: UInt8.self) else {
            throw CArgumentError("out of memory")
        }
        bytes.withUnsafeBytes { src in
            if let base = src.baseAddress { memcpy(p, base, src.count) }
        }
        out.pointee = p
        length.pointee = bytes.count
    }
}
