// HLC: hybrid logical clock timestamps (48-bit milliseconds, 16-bit logical) and the clock itself.

/// A hybrid logical clock timestamp: wall-clock milliseconds since 1970 in the high 48 bits and a
/// logical counter in the low 16.
///
/// HLC timestamps order every write in Shoal: a node's timestamps strictly increase, and a node
/// that has seen a timestamp only issues larger ones afterwards, so the order respects causality
/// while staying close to real time. Last-writer-wins compares `(HLC, NodeID)`.
public struct HLC: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The packed value: `milliseconds << 16 | logical`.
    public let rawValue: UInt64

    /// Creates a timestamp from its packed value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Creates a timestamp from its parts; `milliseconds` is truncated to 48 bits.
    public init(milliseconds: UInt64, logical: UInt16) {
        rawValue = (milliseconds & HLC.millisecondsMask) << 16 | UInt64(logical)
    }

    /// The smallest timestamp.
    public static let zero = HLC(rawValue: 0)
    @usableFromInline static let millisecondsMask: UInt64 = (1 << 48) - 1

    /// Wall-clock milliseconds since 1970-01-01T00:00:00Z.
    public var milliseconds: UInt64 { rawValue >> 16 }
    /// The logical counter within one millisecond.
    public var logical: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    /// The wall-clock part as a ``Timestamp``.
    public var timestamp: Timestamp { Timestamp(millisecondsSince1970: Int64(truncatingIfNeeded: milliseconds)) }

    public static func < (a: HLC, b: HLC) -> Bool { a.rawValue < b.rawValue }

    public var description: String { "\(timestamp)+\(logical)" }
}

extension HLC {
    /// A node's hybrid logical clock: issues strictly increasing timestamps and absorbs remote ones.
    ///
    /// The clock is a value driven by an explicit wall-clock reading, so simulations are
    /// deterministic. A remote timestamp more than ``maxForwardDrift`` milliseconds ahead of our
    /// wall clock is refused (``ClockError``) instead of dragging every later write into the future.
    public struct Clock: Sendable, Hashable {
        /// The last timestamp issued or observed.
        public private(set) var last: HLC
        /// How far, in milliseconds, a remote timestamp may be ahead of the local wall clock.
        public var maxForwardDrift: UInt64

        /// Default ``maxForwardDrift``: one minute.
        public static let defaultMaxForwardDrift: UInt64 = 60_000

        /// Creates a clock that will never issue a timestamp at or below `last`.
        public init(last: HLC = .zero, maxForwardDrift: UInt64 = Clock.defaultMaxForwardDrift) {
            self.last = last
            self.maxForwardDrift = maxForwardDrift
        }

        /// Issues a new timestamp for a local event, strictly above every earlier one.
        public mutating func tick(wallMilliseconds: UInt64) -> HLC {
            let wall = wallMilliseconds & HLC.millisecondsMask
            if wall > last.milliseconds {
                last = HLC(milliseconds: wall, logical: 0)
            } else {
                last = HLC.successor(of: last)
            }
            return last
        }

        /// Absorbs a timestamp received from a peer, so later local timestamps exceed it.
        /// - Throws: ``ClockError`` when `remote` is further ahead of the wall clock than allowed.
        public mutating func observe(_ remote: HLC, wallMilliseconds: UInt64) throws(ClockError) {
            if remote.milliseconds > wallMilliseconds &+ maxForwardDrift {
                throw ClockError(remote: remote, wallMilliseconds: wallMilliseconds, maxForwardDrift: maxForwardDrift)
            }
            if remote > last { last = remote }
        }
    }

    /// The smallest timestamp above `t` (the logical part carries into the milliseconds).
    @usableFromInline package static func successor(of t: HLC) -> HLC {
        HLC(rawValue: t.rawValue &+ 1)
    }

    /// The error of a remote timestamp too far ahead of the local wall clock.
    public struct ClockError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The timestamp received.
        public let remote: HLC
        /// The local wall clock when it was received.
        public let wallMilliseconds: UInt64
        /// The configured bound.
        public let maxForwardDrift: UInt64

        public var description: String {
            "a peer's clock is \(remote.milliseconds &- wallMilliseconds) ms ahead of ours (limit \(maxForwardDrift) ms); fix the peer's clock (NTP) or raise maxForwardDrift"
        }
    }
}
