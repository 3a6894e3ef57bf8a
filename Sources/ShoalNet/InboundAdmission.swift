// InboundAdmission: how many accepted connections a node holds, in all and from one address.

import Synchronization

/// Counts the connections a node accepted and not yet closed, in all and per remote address,
/// and refuses one more beyond ``NetworkConfiguration/maxInboundConnections`` or
/// ``NetworkConfiguration/maxConnectionsPerAddress`` — before TLS, so a flood of connections that
/// never finish a handshake costs a socket each and nothing more, and cannot crowd out peers from
/// other addresses. Dialled connections are not counted.
final class InboundAdmission: Sendable {
    private struct State {
        var total = 0
        var byAddress: [String: Int] = [:]
        var refused = 0
    }

    private let state = Mutex(State())
    private let maxTotal: Int
    private let maxPerAddress: Int

    init(maxTotal: Int, maxPerAddress: Int) {
        self.maxTotal = max(1, maxTotal)
        self.maxPerAddress = max(1, maxPerAddress)
    }

    /// Takes a place for a connection from `address`, or returns why there is none (naming the
    /// limit); every place taken must be given back with ``release(_:)``.
    func admit(_ address: String) -> String? {
        state.withLock { s in
            if s.total >= maxTotal {
                s.refused &+= 1
                return "\(s.total) connections are open, the limit (NetworkConfiguration.maxInboundConnections = \(maxTotal))"
            }
            let fromHere = s.byAddress[address, default: 0]
            if fromHere >= maxPerAddress {
                s.refused &+= 1
                return "\(fromHere) connections from \(address) are open, the limit for one address (NetworkConfiguration.maxConnectionsPerAddress = \(maxPerAddress))"
            }
            s.total &+= 1
            s.byAddress[address] = fromHere &+ 1
            return nil
        }
    }

    /// Gives back the place of a closed connection from `address`.
    func release(_ address: String) {
        state.withLock { s in
            s.total = max(0, s.total &- 1)
            let left = s.byAddress[address, default: 0] &- 1
            s.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// Connections refused for a limit since the node started.
    var refused: Int { state.withLock { $0.refused } }
}

/// Why an accepted connection was closed at once: a limit of ``InboundAdmission`` was reached.
struct InboundRefused: Error, CustomStringConvertible {
    let reason: String
    var description: String { "connection refused: \(reason)" }
}
