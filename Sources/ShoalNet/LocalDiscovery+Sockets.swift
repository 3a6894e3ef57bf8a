// LocalDiscovery+Sockets: opening local discovery's IPv4 and IPv6 sockets, and where each sends.

import Logging
import NIOCore
import NIOPosix
import ShoalWire

extension LocalDiscovery {
    /// The IPv4 socket: bound to 0.0.0.0, the group joined where an interface allows it,
    /// broadcast allowed.
    struct IPv4Socket: Sendable {
        let channel: any Channel
        /// The group when some interface joined it, then the broadcast addresses of the
        /// interfaces where multicast is unavailable.
        let destinations: [SocketAddress]

        /// Binds the port, joins the group on each multicast-capable interface (when none
        /// accepts, on the one the routing table picks) and broadcasts on the others and on
        /// those whose join failed.
        /// - Throws: NIO's error when the port cannot be bound, or no interface joins the group
        ///   and none has a broadcast address.
        static func open(_ configuration: DiscoveryConfiguration, _ interfaces: DiscoveryInterfaces,
                         sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation, group: any EventLoopGroup,
                         logger: Logger) async throws -> IPv4Socket {
            let multicastGroup = try SocketAddress(ipAddress: configuration.ipv4Group, port: configuration.port)
            // SO_REUSEADDR: several nodes on one host share the port, and each gets every
            // datagram. SO_BROADCAST: needed to send to a broadcast address.
            let channel = try await DatagramBootstrap(group: group)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.socketOption(.so_broadcast), value: 1)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: DiscoveryAnnouncement.maxBytes + 1))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DatagramSink(sink)) }
                }
                .bind(host: "0.0.0.0", port: configuration.port).get()
            do {
                guard let multicast = channel as? any MulticastChannel else { throw ChannelError.operationUnsupported }
                var joined = 0
                var broadcast = interfaces.ipv4Broadcast
                for device in interfaces.ipv4Multicast {
                    do {
                        try await multicast.joinGroup(multicastGroup, device: device).get()
                        joined += 1
                    } catch {
                        logger.debug("could not join the IPv4 discovery group; broadcasting there instead",
                                     metadata: ["interface": "\(device.name)", "error": "\(error)"])
                        if let b = DiscoveryInterfaces.broadcast(of: device), !broadcast.contains(b) { broadcast.append(b) }
                    }
                }
                if joined == 0 {
                    do {
                        try await multicast.joinGroup(multicastGroup).get()
                        joined = 1
                    } catch where !broadcast.isEmpty {
                        logger.debug("no interface joined the IPv4 discovery group; broadcasting only", metadata: ["error": "\(error)"])
                    }
                }
                let destinations = (joined > 0 ? [multicastGroup] : []) + broadcast.compactMap {
                    DiscoveryInterfaces.destination($0, port: configuration.port)
                }
                return IPv4Socket(channel: channel, destinations: destinations)
            } catch {
                try? await channel.close()
                throw error
            }
        }

        /// For the log: where announcements go.
        func summary(_ configuration: DiscoveryConfiguration) -> String {
            destinations.map { $0.ipAddress.map { "\($0):\(configuration.port)" } ?? "\($0)" }.joined(separator: ", ")
        }
    }

    /// The IPv6 socket: bound to `::` with IPV6_V6ONLY (so that it shares the port with the IPv4
    /// socket), the group joined on every multicast-capable IPv6 interface.
    struct IPv6Socket: Sendable {
        let channel: any Channel
        /// Per joined interface, its name and the group scoped to it: an announcement goes out
        /// once on each.
        let destinations: [(name: String, address: SocketAddress)]

        /// Binds the port and joins the group on each multicast-capable IPv6 interface; nil,
        /// logged at info, when IPv6 cannot be used (no such interface, no IPv6 in the kernel,
        /// the port taken): discovery then runs over IPv4 alone.
        static func open(_ configuration: DiscoveryConfiguration, _ interfaces: DiscoveryInterfaces,
                         sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation, group: any EventLoopGroup,
                         logger: Logger) async -> IPv6Socket? {
            guard !interfaces.ipv6Multicast.isEmpty else {
                logger.info("local discovery without IPv6: no IPv6 interface supports multicast")
                return nil
            }
            let channel: any Channel
            let multicastGroup: SocketAddress
            do {
                multicastGroup = try SocketAddress(ipAddress: configuration.ipv6Group, port: configuration.port)
                channel = try await DatagramBootstrap(group: group)
                    .channelOption(.socketOption(.so_reuseaddr), value: 1)
                    .channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
                    .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: DiscoveryAnnouncement.maxBytes + 1))
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DatagramSink(sink)) }
                    }
                    .bind(host: "::", port: configuration.port).get()
            } catch {
                logger.info("local discovery without IPv6: the socket cannot be opened", metadata: ["error": "\(error)"])
                return nil
            }
            var destinations = [(name: String, address: SocketAddress)]()
            if let multicast = channel as? any MulticastChannel {
                for device in interfaces.ipv6Multicast {
                    do {
                        try await multicast.joinGroup(multicastGroup, device: device).get()
                        guard let scoped = DiscoveryInterfaces.destination(multicastGroup, port: configuration.port, interface: device.interfaceIndex) else { continue }
                        destinations.append((device.name, scoped))
                    } catch {
                        logger.debug("could not join the IPv6 discovery group", metadata: ["interface": "\(device.name)", "error": "\(error)"])
                    }
                }
            }
            guard !destinations.isEmpty else {
                logger.info("local discovery without IPv6: no interface joined the IPv6 group", metadata: ["group": "\(configuration.ipv6Group)"])
                try? await channel.close()
                return nil
            }
            return IPv6Socket(channel: channel, destinations: destinations)
        }

        /// For the log: the group and the interfaces it was joined on.
        func summary(_ configuration: DiscoveryConfiguration) -> String {
            "[\(configuration.ipv6Group)]:\(configuration.port) on \(destinations.map(\.name).joined(separator: ", "))"
        }
    }
}
