// AssetProgress: how far an import or export has got, reported as it goes.

/// How far an import or export has got.
///
/// Reported to the `progress` callback of ``AssetStore`` imports and exports after every buffer of
/// chunks (about every megabyte) and once at the end, in order, from the task doing the work.
public struct AssetProgress: Hashable, Sendable, CustomStringConvertible {
    /// Content bytes read (import) or written (export) so far.
    public var completedBytes: Int64
    /// The asset's size when known (a file, bytes, an export); nil for a stream of unknown length.
    public var totalBytes: Int64?
    /// Chunks cut (import) or written (export) so far.
    public var chunks: Int

    /// Creates a progress report.
    public init(completedBytes: Int64, totalBytes: Int64?, chunks: Int) {
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
        self.chunks = chunks
    }

    /// Between 0 and 1 when the total is known (1 for an empty asset); nil otherwise.
    public var fractionCompleted: Double? {
        guard let totalBytes else { return nil }
        return totalBytes == 0 ? 1 : Double(completedBytes) / Double(totalBytes)
    }

    /// "12582912 of 268435456 bytes, 190 chunks".
    public var description: String {
        "\(completedBytes)" + (totalBytes.map { " of \($0)" } ?? "") + " bytes, \(chunks) chunks"
    }
}

/// The callback that receives ``AssetProgress`` reports.
public typealias AssetProgressHandler = @Sendable (AssetProgress) -> Void
