// DuplicateConnections: which of two connections between the same pair of devices goes.

import Foundation
import ShoalSync
import ShoalWire

/// The rule that leaves one connection between two devices that dialled each other.
///
/// When both devices dial, each holds one connection it dialled and one it accepted, and every
/// change would travel twice. Only the device with the larger ID acts: it closes the connections
/// it dialled and keeps the one it accepted (its dialler then waits while that one lasts). It does
/// so only when the accepted connection is shown to be alive, by a frame read on it moments ago:
/// an older accepted connection may be dead (the device moved or restarted) and the dialled one
/// its replacement. When the accepted connection has been quiet, the decision waits for its next
/// frame (at the latest its peer's ping) instead of guessing; if none comes, the idle timeout
/// closes it and the dialled connection stays.
struct DuplicateConnections {
    /// What one connection to the device in question looks like to the rule.
    struct Connection: Equatable {
        /// The connection's ID.
        var id: ConnectionID
        /// Whether this node dialled it (false: accepted).
        var dialed: Bool
        /// Whether it dials for local discovery (such a connection follows discovery's own rule).
        var discovery: Bool
        /// Whether its hello has arrived.
        var established: Bool
        /// When its last frame was read, nil before the first.
        var lastFrame: Date?
    }

    /// What to do about one device's connections.
    enum Decision: Equatable {
        /// Nothing: one connection, or this node is not the one that acts.
        case keep
        /// Close these dialled connections: the accepted one answers.
        case close([ConnectionID])
        /// Both kinds are established but the accepted one has been quiet: decide again when it
        /// next reads a frame.
        case awaitAcceptedFrame
    }

    /// How recent the accepted connection's last frame must be to count as alive.
    static let aliveWithin: TimeInterval = 10

    /// The decision for the connections `connections` to device `device`, seen from the device
    /// `own` at time `now`.
    static func decide(own: DeviceID, device: DeviceID, connections: [Connection], now: Date) -> Decision {
        guard own > device else { return .keep }
        let dialled = connections.filter { $0.dialed && !$0.discovery && $0.established }.map(\.id)
        let accepted = connections.filter { !$0.dialed && $0.established }
        guard !dialled.isEmpty, !accepted.isEmpty else { return .keep }
        let alive = accepted.contains { c in c.lastFrame.map { now.timeIntervalSince($0) < aliveWithin } ?? false }
        return alive ? .close(dialled.sorted { $0.rawValue < $1.rawValue }) : .awaitAcceptedFrame
    }
}
