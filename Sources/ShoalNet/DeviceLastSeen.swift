// DeviceLastSeen: when a device was last heard from — a frame on a connection, or an announcement on the LAN.

public import Foundation
import Synchronization

/// When this node last heard from a trusted device, and how (``NetworkNode/lastSeen(of:)``):
/// `shoal status` shows it per device, so a user can tell a peer that is quiet from one that is
/// gone.
///
/// Both times are wall-clock times of this node, kept since it started (not in the store).
public struct DeviceLastSeen: Sendable, Hashable {
    /// When the last frame arrived from the device on a connection — open now or closed since —
    /// or nil when none has since this node started. A connected peer sends at least a ping
    /// every ``NetworkConfiguration/pingInterval``, so on an open connection this keeps moving.
    public var frame: Date?
    /// When the last announcement of the device arrived through local discovery
    /// (Spec/discovery.md §4), or nil when none has since this node started.
    public var announcement: Date?

    /// A record of the last frame and the last announcement, either of which may be missing.
    public init(frame: Date? = nil, announcement: Date? = nil) {
        self.frame = frame
        self.announcement = announcement
    }

    /// The later of ``frame`` and ``announcement``, or nil when the device was not heard from.
    public var latest: Date? {
        switch (frame, announcement) {
        case let (f?, a?): max(f, a)
        case let (f, a): f ?? a
        }
    }

    /// How the device was last heard from: what ``latest`` is the time of (a frame when both
    /// arrived at once), or nil when it was not heard from.
    public var latestSource: Source? {
        guard let latest else { return nil }
        return frame == latest ? .frame : .announcement
    }

    /// A way of hearing from a device.
    public enum Source: String, Sendable, Hashable {
        /// A frame on a connection with it.
        case frame
        /// Its announcement through local discovery.
        case announcement
    }
}

/// The time the last frame was read from one connection: stamped on its event loop for each
/// frame (``KeepaliveHandler``), read by the node when asked; one atomic store per frame.
final class ReceiveClock: Sendable {
    /// Milliseconds since 1970 of the last frame; 0 before the first.
    private let milliseconds = Atomic<Int64>(0)

    /// Notes a frame read now.
    func stamp() {
        milliseconds.store(Int64(Date().timeIntervalSince1970 * 1000), ordering: .relaxed)
    }

    /// When the last frame was read, or nil before the first.
    var last: Date? {
        let ms = milliseconds.load(ordering: .relaxed)
        return ms == 0 ? nil : Date(timeIntervalSince1970: Double(ms) / 1000)
    }
}
