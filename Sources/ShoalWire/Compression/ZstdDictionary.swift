// ZstdDictionary: a trained zstd dictionary, named by its ID, with its prepared contexts.

internal import CZstd
internal import Synchronization

/// A zstd dictionary that frames may be compressed with, identified by the dictionary ID that its
/// header carries and that a frame's header repeats.
///
/// Dictionaries help most for small payloads (a single record delta): the shared field names,
/// type tags and common values are in the dictionary instead of every frame. Both ends must hold
/// the dictionary; peers announce the IDs they hold in their hello, and a frame that names an
/// unknown dictionary is rejected with ``WireError/Code/unknownDictionary``.
///
/// The prepared zstd structures are read-only once built; libzstd allows sharing them between
/// threads, which is why this class is `@unchecked Sendable`.
public final class ZstdDictionary: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The dictionary ID (from the dictionary's header), carried in every frame that uses it.
    public let id: UInt32
    /// The dictionary's bytes in zstd's dictionary format (usable as `zstd -D FILE`).
    public let bytes: [UInt8]

    private let ddict: OpaquePointer?
    private let cdicts = Mutex<[Int32: OpaquePointer]>([:])

    /// Wraps the bytes of a zstd dictionary.
    /// - Throws: ``WireError`` `invalidValue` when `bytes` is not a zstd dictionary with an ID.
    public init(bytes: [UInt8]) throws(WireError) {
        let id = bytes.withUnsafeBytes { ZDICT_getDictID($0.baseAddress, $0.count) }
        guard id != 0 else {
            throw WireError(
                .invalidValue, at: 0,
                "not a zstd dictionary with an ID (train one with `zstd --train` or ZstdDictionary.train)")
        }
        self.id = id
        self.bytes = bytes
        self.ddict = bytes.withUnsafeBytes { ZSTD_createDDict($0.baseAddress, $0.count) }
    }

    /// A placeholder holding no dictionary bytes: frames "compressed with it" are plain zstd.
    /// Used only if the built-in dictionary literal failed to decode (the tests forbid that).
    package init(unchecked id: UInt32) {
        self.id = id
        self.bytes = []
        self.ddict = nil
    }

    deinit {
        if let ddict { ZSTD_freeDDict(ddict) }
        cdicts.withLock { for (_, c) in $0 { ZSTD_freeCDict(c) } }
    }

    var decompressionDictionary: OpaquePointer? { ddict }

    /// The dictionary prepared for compression at `level`, built once per level.
    func compressionDictionary(level: Int32) -> OpaquePointer? {
        guard !bytes.isEmpty else { return nil }
        return cdicts.withLock { built in
            if let c = built[level] { return c }
            let c = bytes.withUnsafeBytes { ZSTD_createCDict($0.baseAddress, $0.count, level) }
            if let c { built[level] = c }
            return c
        }
    }

    /// Trains a dictionary of at most `capacity` bytes from sample payloads and gives it `id`.
    ///
    /// Pick an `id` between 32,768 and 2³¹ − 1 (zstd reserves the others). Use a few thousand
    /// samples totalling about a hundred times `capacity`.
    /// - Throws: ``WireError`` `invalidValue` when zstd cannot train from these samples.
    public static func train(id: UInt32, capacity: Int, samples: [[UInt8]]) throws(WireError) -> ZstdDictionary {
        guard id >= 32_768, id < 1 << 31 else {
            throw WireError(
                .invalidValue, at: 0, "dictionary ID \(id) is reserved by zstd; use 32768 through 2147483647")
        }
        let flat = samples.flatMap { $0 }
        let sizes = samples.map(\.count)
        var dict = [UInt8](repeating: 0, count: capacity)
        let n = dict.withUnsafeMutableBytes { d in
            flat.withUnsafeBytes { s in
                sizes.withUnsafeBufferPointer { z in
                    ZDICT_trainFromBuffer(
                        d.baseAddress, d.count, s.baseAddress, z.baseAddress, UInt32(clamping: z.count))
                }
            }
        }
        guard ZDICT_isError(n) == 0, n >= 8 else {
            let why = ZDICT_isError(n) != 0 ? String(cString: ZDICT_getErrorName(n)) : "dictionary too small"
            throw WireError(
                .invalidValue, at: 0, "zstd could not train a dictionary from \(samples.count) samples: \(why)")
        }
        dict.removeSubrange(n...)
        // The header is the magic (4 bytes) then the dictionary ID, little-endian.
        for k in 0..<4 { dict[4 + k] = UInt8(truncatingIfNeeded: id >> (8 * UInt32(k))) }
        return try ZstdDictionary(bytes: dict)
    }

    public static func == (a: ZstdDictionary, b: ZstdDictionary) -> Bool { a.id == b.id && a.bytes == b.bytes }
    public func hash(into h: inout Hasher) { h.combine(id) }
    public var description: String { "zstd dictionary \(id) (\(bytes.count) bytes)" }
}

/// The dictionaries a reader can decode with, by ID.
public struct ZstdDictionarySet: Sendable {
    /// The dictionaries, by ID.
    public private(set) var byID: [UInt32: ZstdDictionary]

    /// A set of `dictionaries`; a later one with the same ID replaces an earlier one.
    public init(_ dictionaries: [ZstdDictionary] = []) {
        byID = [:]
        for d in dictionaries { byID[d.id] = d }
    }

    /// The set holding only Shoal's built-in dictionaries.
    public static var builtIn: ZstdDictionarySet { ZstdDictionarySet([BuiltInDictionaries.records]) }

    /// Adds or replaces a dictionary.
    public mutating func insert(_ d: ZstdDictionary) { byID[d.id] = d }

    /// The dictionary with `id`, if held.
    public subscript(id: UInt32) -> ZstdDictionary? { byID[id] }
}
