// PostingList: the names of the records holding one indexed value, as `field_postings` stores them.

import ShoalWire

/// The names under one (index, kind, value) run of `field_postings`: each name as a varint byte
/// count and its UTF-8 bytes. Runs of one value only ever list records that hold it; removing a
/// record rewrites the value's runs as one (`Store.flushIndexLog`).
enum PostingList {
    /// `names` encoded as one run.
    static func encode<S: Sequence>(_ names: S) -> [UInt8] where S.Element == String {
        var out = [UInt8]()
        for name in names { append(name, to: &out) }
        return out
    }

    /// Appends `name` to an encoded run.
    static func append(_ name: String, to out: inout [UInt8]) {
        var name = name
        name.withUTF8 { b in
            var n = UInt64(b.count)
            while n >= 0x80 {
                out.append(UInt8(truncatingIfNeeded: n) | 0x80)
                n >>= 7
            }
            out.append(UInt8(n))
            out.append(contentsOf: b)
        }
    }

    /// Calls `body` with every name of a stored run; a run that does not parse is `internalError`
    /// naming `index` (the store is damaged, not the caller's input).
    static func forEach(_ raw: UnsafeRawBufferPointer, index: Int64, _ body: (String) -> Void) throws(ShoalError) {
        var i = 0
        while i < raw.count {
            var n = 0
            var shift = 0
            while true {
                guard i < raw.count, shift < 28 else {
                    throw .internalError(
                        "a run of index \(index)'s entries is damaged (a name length is cut off or too long); run `declareIndex` on a fresh store, or resync it from a peer"
                    )
                }
                let byte = raw[i]
                i += 1
                n |= Int(byte & 0x7F) << shift
                shift += 7
                if byte & 0x80 == 0 { break }
            }
            guard n <= raw.count - i else {
                throw .internalError(
                    "a run of index \(index)'s entries is damaged (a name of \(n) bytes runs past the run's \(raw.count)); resync the store from a peer"
                )
            }
            body(String(decoding: UnsafeRawBufferPointer(rebasing: raw[i..<(i + n)]), as: UTF8.self))
            i += n
        }
    }
}

/// A change to a declared index not yet written to `field_postings`: entry (index, kind, value,
/// record name) made present or absent. `order` places it among the others: the last change of
/// an entry is the one that counts.
struct IndexChange {
    var index: Int64
    var kind: Int
    var value: IndexValue
    var name: String
    var order: Int
    var present: Bool

    /// Whether `a` sorts before `b` by entry, then by order. The value order only has to group
    /// equal values (it is not the order SQLite keeps them in).
    static func sortsBefore(_ a: IndexChange, _ b: IndexChange) -> Bool {
        let v = IndexedValue.compare(a.key, b.key)
        if v != 0 { return v < 0 }
        let n = UTF8Order.compare(a.name, b.name)
        if n != 0 { return n < 0 }
        return a.order < b.order
    }

    /// The (index, kind, value) the change is under.
    var key: IndexedValue { IndexedValue(index: index, kind: kind, value: value) }
}

/// One value of one declared index: the key of its runs in `field_postings`.
struct IndexedValue: Hashable {
    var index: Int64
    var kind: Int
    var value: IndexValue

    /// By index, kind, then value (``IndexValue/compare(_:_:)``): -1, 0 or 1.
    static func compare(_ a: IndexedValue, _ b: IndexedValue) -> Int {
        if a.index != b.index { return a.index < b.index ? -1 : 1 }
        if a.kind != b.kind { return a.kind < b.kind ? -1 : 1 }
        return IndexValue.compare(a.value, b.value)
    }
}

extension IndexValue {
    /// A total order for grouping: by SQLite type, then by value (doubles by bit pattern when
    /// unordered, so NaN groups with itself).
    static func compare(_ a: IndexValue, _ b: IndexValue) -> Int {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return x < y ? -1 : x == y ? 0 : 1
        case (.real(let x), .real(let y)):
            if x < y { return -1 }
            if x > y { return 1 }
            return x.bitPattern < y.bitPattern ? -1 : x.bitPattern == y.bitPattern ? 0 : 1
        case (.text(let x), .text(let y)): return UTF8Order.compare(x, y)
        case (.blob(let x), .blob(let y)):
            return x.withUnsafeBytes { p in y.withUnsafeBytes { q in UTF8Order.compare(p, q) } }
        default: return a.rank < b.rank ? -1 : 1
        }
    }

    private var rank: Int {
        switch self {
        case .integer: 0
        case .real: 1
        case .text: 2
        case .blob: 3
        }
    }

    /// The value in column `i` of `s`'s row, by its SQLite type.
    init(column i: Int32, of s: SQLiteStatement) {
        switch s.columnType(i) {
        case .integer: self = .integer(s.int64(i))
        case .real: self = .real(s.double(i))
        case .text: self = .text(s.text(i))
        case .blob: self = .blob(s.blob(i))
        }
    }
}
