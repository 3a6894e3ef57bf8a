// Store+Storage: how much disk the store's database takes, and how much of it is in use.

/// The size of a store's SQLite database (``Store/storageUsage()``).
public struct StorageUsage: Sendable, Hashable {
    /// The database file's size in bytes (its pages; the write-ahead log not counted).
    public var fileBytes: Int64
    /// Bytes on free pages: space rows left (deleted records, purged tombstones) that new writes
    /// reuse before the file grows.
    public var freeBytes: Int64
    /// Bytes in use: ``fileBytes`` less ``freeBytes``.
    public var usedBytes: Int64 { fileBytes - freeBytes }
}

extension Store {
    /// How large the database file is and how much of it holds data.
    /// - Throws: `internalError` if SQLite fails.
    public func storageUsage() throws(ShoalError) -> StorageUsage {
        func pragma(_ name: String) throws(ShoalError) -> Int64 {
            let s = try db.statement("PRAGMA \(name)")
            defer { s.reset() }
            return try s.step() ? s.int64(0) : 0
        }
        let pageSize = try pragma("page_size"), pages = try pragma("page_count"), free = try pragma("freelist_count")
        return StorageUsage(fileBytes: pageSize &* pages, freeBytes: pageSize &* free)
    }
}
