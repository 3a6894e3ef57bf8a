// CFrames: the C frame reader and encoder (shoalwire.h): a FrameReader behind an opaque pointer,
// holding the bytes fed to it until `next` has taken them.

public import CShoalWire
import ShoalWire

/// The reader a `shoal_frame_reader *` points to: the Swift reader and the bytes not yet read.
final class CFrameReader {
    var reader: FrameReader
    var input: [UInt8] = []
    var start = 0
    var failed = false

    init(limits: WireLimits, acceptsStreamCompression: Bool) {
        reader = FrameReader(limits: limits, acceptsStreamCompression: acceptsStreamCompression)
    }

    /// Fed bytes that no returned frame has consumed yet (those inside the reader included).
    var pending: Int { input.count &- start &+ reader.bufferedByteCount }

    static func from(_ pointer: OpaquePointer?) throws -> CFrameReader {
        guard let pointer else { throw CArgumentError("reader is NULL") }
        return Unmanaged<CFrameReader>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }
}

/// A reader with the Spec's limits, or NULL when the arguments are refused (shoalwire.h).
@_cdecl("shoal_frame_reader_new")
public func shoalFrameReaderNew(_ maxPayloadBytes: Int, _ options: UInt32) -> OpaquePointer? {
    var limits = WireLimits.default
    guard maxPayloadBytes >= 0, maxPayloadBytes <= limits.maxFramePayloadBytes, options & ~UInt32(1) == 0 else {
        return nil
    }
    if maxPayloadBytes > 0 { limits.maxFramePayloadBytes = maxPayloadBytes }
    let reader = CFrameReader(limits: limits, acceptsStreamCompression: options & 1 != 0)
    return OpaquePointer(Unmanaged.passRetained(reader).toOpaque())
}

/// Hands the reader the next bytes of the stream (shoalwire.h).
@_cdecl("shoal_frame_reader_feed")
public func shoalFrameReaderFeed(
    _ pointer: OpaquePointer?, _ bytes: UnsafePointer<UInt8>?, _ len: Int,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        let r = try CFrameReader.from(pointer)
        let input = try CBoundary.input(bytes, len)
        guard !r.failed else { throw CArgumentError("the reader failed on an earlier frame; close the connection") }
        if r.start == r.input.count {
            r.input.removeAll(keepingCapacity: true)
            r.start = 0
        }
        r.input.append(contentsOf: input)
    }
}

/// Returns 1 with the next frame, 0 when more bytes are needed, -1 on a malformed stream (shoalwire.h).
@_cdecl("shoal_frame_reader_next")
public func shoalFrameReaderNext(
    _ pointer: OpaquePointer?, _ frame: UnsafeMutablePointer<shoal_frame>?,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    var ready: Int32 = 0
    let status = CBoundary.run(err) {
        let r = try CFrameReader.from(pointer)
        guard let frame else { throw CArgumentError("frame is NULL") }
        frame.pointee = shoal_frame(type: 0, flags: 0, dictionary: 0, payload: nil, payload_len: 0)
        let next: Frame? = try r.input.withUnsafeBytes { whole in
            var rest = UnsafeRawBufferPointer(rebasing: whole[r.start...])
            let before = rest.count
            defer { r.start &+= before &- rest.count }
            do {
                return try r.reader.next(from: &rest)
            } catch {
                r.failed = true
                throw error
            }
        }
        guard let next else { return }
        var dictionary: UInt32 = 0
        var flags: UInt8 = 0
        switch next.compression {
        case .none: flags = 0
        case .zstd: flags = 1
        case .dictionary(let id): flags = 2; dictionary = id
        case .stream: flags = 3
        }
        var payload: UnsafeMutablePointer<UInt8>? = nil
        var length = 0
        if !next.payload.isEmpty { try CBoundary.hand(bytes: next.payload, to: &payload, length: &length) }
        frame.pointee = shoal_frame(
            type: next.type.rawValue, flags: flags, dictionary: dictionary, payload: payload, payload_len: length)
        ready = 1
    }
    return status == 0 ? ready : -1
}

/// Bytes of the stream consumed by complete frames so far (shoalwire.h).
@_cdecl("shoal_frame_reader_consumed")
public func shoalFrameReaderConsumed(_ pointer: OpaquePointer?) -> Int {
    (try? CFrameReader.from(pointer))?.reader.consumedByteCount ?? 0
}

/// Bytes fed but not yet part of a returned frame (shoalwire.h).
@_cdecl("shoal_frame_reader_pending")
public func shoalFrameReaderPending(_ pointer: OpaquePointer?) -> Int {
    (try? CFrameReader.from(pointer))?.pending ?? 0
}

/// Releases a reader (shoalwire.h).
@_cdecl("shoal_frame_reader_free")
public func shoalFrameReaderFree(_ pointer: OpaquePointer?) {
    guard let pointer else { return }
    Unmanaged<CFrameReader>.fromOpaque(UnsafeRawPointer(pointer)).release()
}

/// Encodes a payload as one uncompressed frame (shoalwire.h).
@_cdecl("shoal_frame_encode")
public func shoalFrameEncode(
    _ type: UInt8, _ payload: UnsafePointer<UInt8>?, _ len: Int,
    _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ outLength: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, outLength)
        guard type != 0 else { throw CArgumentError("frame type 0 is reserved") }
        let encoder = FrameEncoder(options: .init(mode: .none))
        let frame = try encoder.encode(
            FrameType(rawValue: type), payload: try CBoundary.input(payload, len), mayCompress: false)
        try CBoundary.hand(bytes: frame, to: bytes, length: outLength)
    }
}
