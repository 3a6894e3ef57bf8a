// DiffOptions: the knobs of delta computation — when byte-range patches are tried.

/// How ``diff(_:_:options:)`` chooses between resending a value and editing it in place.
public struct DiffOptions: Hashable, Sendable {
    /// Smallest string or bytes value, in bytes (the larger of the old and new value's size),
    /// for which a byte-range patch is tried instead of resending the whole value. Default 4 KiB.
    ///
    /// Smaller values are always resent whole: below a few KiB a patch rarely saves enough to pay
    /// for scanning both values.
    public var bytePatchThreshold: Int

    /// Whether list values are edited element-wise (splices) when that encodes smaller than the
    /// whole new list. Default true.
    public var listSplices: Bool

    /// Creates options; the defaults suit replication.
    @inlinable
    public init(bytePatchThreshold: Int = 4096, listSplices: Bool = true) {
        self.bytePatchThreshold = bytePatchThreshold
        self.listSplices = listSplices
    }

    /// The defaults: patches from 4 KiB, list splices on.
    @inlinable
    public static var `default`: DiffOptions { DiffOptions() }
}
