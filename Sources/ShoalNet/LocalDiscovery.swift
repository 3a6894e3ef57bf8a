// LocalDiscovery: the UDP socket of local discovery — multicasts this device's announcement, receives others'.

import Foundation
package import Logging
package import NIOCore
import NIOPosix
package import ShoalWire

/// Sends this device's ``DiscoveryAnnouncement`` to the IPv4 multicast group of
/// ``DiscoveryConfiguration`` (at once, then every interval, and soon after hearing a device
/// for the first time) and hands every valid announcement from another device to `receive`.
///
/// It decides nothing: ``NetworkNode`` keeps what was heard and dials trusted devices
/// (`NetworkNode+Discovery.swift`). Bounded: a datagram is read into at most
/// ``DiscoveryAnnouncement/maxBytes`` + 1 bytes (a longer one is refused whole), and at most 64
/// received datagrams wait for `receive`; more are dropped, the newest kept.
package actor LocalDiscovery {
    /// Called with each valid announcement of another device and the address it came from.
    package typealias Receive = @Sendable (DiscoveryAnnouncement, SocketAddress) async -> Void

    let configuration: DiscoveryConfiguration
    let logger: Logger
    let group: any EventLoopGroup
    /// This device's announcement, re-encoded when the endpoints change.
    var announcement: DiscoveryAnnouncement
    var channel: (any Channel)?
    var tasks: [Task<Void, Never>] = []
    /// Set to announce before the interval is up (a new device was heard).
    var soon = false
    /// Datagrams dropped because they did not decode (for logs and tests).
    package private(set) var refused = 0
    /// Announcements sent.
    package private(set) var sent = 0

    /// Creates the discovery of `device`, announcing `endpoints` under a fresh random instance.
    package init(device: DeviceID, endpoints: [DiscoveryAnnouncement.Endpoint], configuration: DiscoveryConfiguration, logger: Logger,
                 group: any EventLoopGroup) {
        self.configuration = configuration
        self.logger = logger
        self.group = group
        announcement = DiscoveryAnnouncement(device: device, instance: UInt64.random(in: 1...UInt64.max), endpoints: endpoints)
    }

    /// Binds the discovery port on every IPv4 address, joins the group on every interface that
    /// supports multicast and starts announcing and receiving.
    /// - Throws: NIO's error when the port cannot be bound or no interface can join the group.
    package func start(receive: @escaping Receive) async throws {
        let (datagrams, sink) = AsyncStream<AddressedEnvelope<ByteBuffer>>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let groupAddress = try SocketAddress(ipAddress: configuration.ipv4Group, port: configuration.port)
        // SO_REUSEADDR: several nodes on one host share the port, and each gets every multicast
        // datagram. One byte more than an announcement may be: a longer datagram arrives cut
        // there, and the size check refuses it without reading more.
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: DiscoveryAnnouncement.maxBytes + 1))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DatagramSink(sink)) }
            }
            .bind(host: "0.0.0.0", port: configuration.port).get()
        self.channel = channel
        do {
            try await Self.join(channel, groupAddress, logger: logger)
        } catch {
            try? await channel.close()
            self.channel = nil
            throw error
        }
        let me = announcement.device
        tasks.append(Task { [weak self] in
            for await d in datagrams {
                var payload = d.data
                let bytes = payload.readBytes(length: payload.readableBytes) ?? []
                let decoded: DiscoveryAnnouncement
                do {
                    decoded = try DiscoveryAnnouncement(decoding: bytes)
                } catch {
                    await self?.countRefused(error, from: d.remoteAddress)
                    continue
                }
                // Our own packet, looped back by the kernel (IP_MULTICAST_LOOP), or another
                // node of this device (a copy of its data directory): nothing to dial.
                if decoded.device == me { continue }
                await receive(decoded, d.remoteAddress)
            }
        })
        tasks.append(Task { [weak self] in
            await self?.announceLoop(to: groupAddress)
        })
        logger.info("local discovery on", metadata: ["group": "\(configuration.ipv4Group):\(configuration.port)",
                                                     "interval": "\(configuration.interval)", "endpoints": "\(announcement.endpoints)"])
    }

    /// Joins `group` on each up, multicast-capable, non-loopback IPv4 interface; when none
    /// qualifies (or none accepts), on the interface the routing table picks.
    static func join(_ channel: any Channel, _ group: SocketAddress, logger: Logger) async throws {
        guard let multicast = channel as? any MulticastChannel else {
            throw ChannelError.operationUnsupported
        }
        var joined = 0
        for device in (try? System.enumerateDevices()) ?? [] where device.multicastSupported {
            guard case .v4? = device.address, device.address?.ipAddress?.hasPrefix("127.") == false else { continue }
            do {
                try await multicast.joinGroup(group, device: device).get()
                joined += 1
            } catch {
                logger.debug("could not join the discovery group", metadata: ["interface": "\(device.name)", "error": "\(error)"])
            }
        }
        if joined == 0 { try await multicast.joinGroup(group).get() }
    }

    func countRefused(_ error: any Error, from source: SocketAddress) {
        refused += 1
        logger.debug("refused a discovery datagram", metadata: ["from": "\(source)", "error": "\(error)"])
    }

    /// Announces at once, then every interval, and after ``announceSoon()`` — never more than
    /// once a second.
    func announceLoop(to group: SocketAddress) async {
        var failures = 0
        while !Task.isCancelled {
            if let channel {
                do {
                    try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: group, data: ByteBuffer(bytes: announcement.encoded())))
                    sent += 1
                    failures = 0
                } catch {
                    // No route to the group (no default route, no 224.0.0.0/4 route): said once,
                    // then every power of two, as failed dials are.
                    failures += 1
                    logger.log(level: failures & (failures - 1) == 0 ? .notice : .debug, "could not send the discovery announcement",
                               metadata: ["group": "\(group)", "error": "\(error)", "failures": "\(failures)",
                                          "hint": "the host needs a route for multicast (a default route, or 224.0.0.0/4 on the LAN's interface)"])
                }
            }
            let earliest = ContinuousClock.now + .seconds(1), deadline = ContinuousClock.now + configuration.interval
            soon = false
            // Short naps rather than one long sleep, so a request to announce soon is seen.
            while !Task.isCancelled, ContinuousClock.now < deadline, !(soon && ContinuousClock.now >= earliest) {
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// Announces again soon (within a second): a device new to this node was heard, and should
    /// hear this one without waiting for the interval (Syncthing does the same).
    package func announceSoon() { soon = true }

    /// Changes the endpoints announced from the next announcement on.
    package func announce(_ endpoints: [DiscoveryAnnouncement.Endpoint]) {
        announcement.endpoints = endpoints
    }

    /// Stops announcing and receiving and closes the socket.
    package func stop() async {
        for t in tasks { t.cancel() }
        tasks = []
        try? await channel?.close()
        channel = nil
    }
}

/// Passes received datagrams to an `AsyncStream` (bounded by its buffering policy).
final class DatagramSink: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation

    init(_ sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation) { self.sink = sink }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        sink.yield(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        sink.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram socket stays usable after an error (an ICMP unreachable, say): keep it.
    }
}
