// LocalDiscovery: the UDP sockets of local discovery — send this device's announcement, receive others'.

import Foundation
package import Logging
package import NIOCore
import NIOPosix
package import ShoalWire

/// Sends this device's ``DiscoveryAnnouncement`` (at once, then every interval, and soon after
/// hearing a device for the first time) to the IPv4 multicast group of ``DiscoveryConfiguration``,
/// to the broadcast address of each IPv4 interface where multicast is unavailable, and to the
/// IPv6 group on each IPv6 interface; hands every valid announcement from another device to
/// `receive`. Either family alone is enough to run (Spec/discovery.md §3).
///
/// It decides nothing: ``NetworkNode`` keeps what was heard and dials trusted devices
/// (`NetworkNode+Discovery.swift`). Bounded: a datagram is read into at most
/// ``DiscoveryAnnouncement/maxBytes`` + 1 bytes (a longer one is refused whole), and at most 64
/// received datagrams wait for `receive`; more are dropped, the newest kept.
package actor LocalDiscovery {
    /// Called with each valid announcement of another device and the address it came from.
    package typealias Receive = @Sendable (DiscoveryAnnouncement, SocketAddress) async -> Void

    /// What a node announces over each family (Spec/discovery.md §3, "What").
    package struct Endpoints: Sendable, Hashable {
        /// Sent over IPv4, multicast and broadcast.
        package var ipv4: [DiscoveryAnnouncement.Endpoint]
        /// Sent over IPv6; nothing is sent there when empty (the node does not listen on IPv6).
        package var ipv6: [DiscoveryAnnouncement.Endpoint]

        package init(ipv4: [DiscoveryAnnouncement.Endpoint], ipv6: [DiscoveryAnnouncement.Endpoint]) {
            self.ipv4 = ipv4
            self.ipv6 = ipv6
        }

        /// Whether there is nothing to announce at all.
        package var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }
    }

    let configuration: DiscoveryConfiguration
    let logger: Logger
    let group: any EventLoopGroup
    let device: DeviceID
    /// Random, chosen at start: it tells the receivers this node restarted.
    let instance = UInt64.random(in: 1...UInt64.max)
    /// What is announced, changed by ``announce(_:)``.
    var endpoints: Endpoints
    /// The IPv4 socket, bound to 0.0.0.0, while it runs.
    var ipv4: IPv4Socket?
    /// The IPv6 socket, bound to `::` (IPv6 only), while it runs.
    var ipv6: IPv6Socket?
    var sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation?
    var tasks: [Task<Void, Never>] = []
    /// Set to announce before the interval is up (a new device was heard).
    var soon = false
    /// Failed sends in a row, per destination, for logs said once then at powers of two.
    var failures: [String: Int] = [:]
    /// Datagrams dropped because they did not decode (for logs and tests).
    package private(set) var refused = 0
    /// Datagrams sent (one announcement goes out as one datagram per destination).
    package private(set) var sent = 0

    /// Creates the discovery of `device`, announcing `endpoints` under a fresh random instance.
    package init(device: DeviceID, endpoints: Endpoints, configuration: DiscoveryConfiguration, logger: Logger, group: any EventLoopGroup) {
        self.configuration = configuration
        self.logger = logger
        self.group = group
        self.device = device
        self.endpoints = endpoints
    }

    /// Opens the IPv4 socket (port bound on 0.0.0.0, group joined on every multicast-capable
    /// interface, broadcast on the others) and the IPv6 one (group joined on every
    /// multicast-capable IPv6 interface), and starts announcing and receiving. IPv6 that is
    /// unavailable is logged and left out; so is IPv4 when IPv6 runs.
    /// - Throws: NIO's error when neither family can be used (the port cannot be bound, no
    ///   interface can join a group and none can broadcast).
    package func start(receive: @escaping Receive) async throws {
        let (datagrams, sink) = AsyncStream<AddressedEnvelope<ByteBuffer>>.makeStream(bufferingPolicy: .bufferingNewest(64))
        self.sink = sink
        let interfaces = DiscoveryInterfaces((try? System.enumerateDevices()) ?? [])
        var ipv4Error: (any Error)?
        do {
            ipv4 = try await IPv4Socket.open(configuration, interfaces, sink: sink, group: group, logger: logger)
        } catch {
            ipv4Error = error
        }
        ipv6 = await IPv6Socket.open(configuration, interfaces, sink: sink, group: group, logger: logger)
        if let ipv4Error {
            guard ipv6 != nil else {
                sink.finish()
                throw ipv4Error
            }
            logger.info("local discovery runs over IPv6 only: IPv4 is unavailable", metadata: ["error": "\(ipv4Error)"])
        }
        let me = device
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
            await self?.announceLoop()
        })
        logger.info("local discovery on", metadata: [
            "ipv4": "\(ipv4.map { $0.summary(configuration) } ?? "off")",
            "ipv6": "\(ipv6.map { $0.summary(configuration) } ?? "off")",
            "interval": "\(configuration.interval)", "endpoints": "\(endpoints)",
        ])
    }

    func countRefused(_ error: any Error, from source: SocketAddress) {
        refused += 1
        logger.debug("refused a discovery datagram", metadata: ["from": "\(source)", "error": "\(error)"])
    }

    /// Announces at once, then every interval, and after ``announceSoon()`` — never more than
    /// once a second.
    func announceLoop() async {
        while !Task.isCancelled {
            await announceOnce()
            let earliest = ContinuousClock.now + .seconds(1), deadline = ContinuousClock.now + configuration.interval
            soon = false
            // Short naps rather than one long sleep, so a request to announce soon is seen.
            while !Task.isCancelled, ContinuousClock.now < deadline, !(soon && ContinuousClock.now >= earliest) {
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// Sends the announcement once to every destination of each family that runs.
    func announceOnce() async {
        if let ipv4, !endpoints.ipv4.isEmpty {
            let bytes = DiscoveryAnnouncement(device: device, instance: instance, endpoints: endpoints.ipv4).encoded()
            for destination in ipv4.destinations {
                await send(bytes, to: destination, on: ipv4.channel, label: "\(destination)",
                           hint: "the host needs a route for multicast (a default route, or 224.0.0.0/4 on the LAN's interface)")
            }
        }
        if let ipv6, !endpoints.ipv6.isEmpty {
            let bytes = DiscoveryAnnouncement(device: device, instance: instance, endpoints: endpoints.ipv6).encoded()
            for (name, destination) in ipv6.destinations {
                await send(bytes, to: destination, on: ipv6.channel, label: "\(configuration.ipv6Group)%\(name)",
                           hint: "the interface needs a usable IPv6 link-local address")
            }
        }
    }

    /// Sends one datagram; a failure is logged once, then every power of two, as failed dials are.
    func send(_ bytes: [UInt8], to destination: SocketAddress, on channel: any Channel, label: String, hint: String) async {
        do {
            try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: ByteBuffer(bytes: bytes)))
            sent += 1
            failures[label] = nil
        } catch {
            let count = failures[label, default: 0] + 1
            failures[label] = count
            logger.log(level: count & (count - 1) == 0 ? .notice : .debug, "could not send the discovery announcement",
                       metadata: ["to": "\(label)", "error": "\(error)", "failures": "\(count)", "hint": "\(hint)"])
        }
    }

    /// Announces again soon (within a second): a device new to this node was heard, and should
    /// hear this one without waiting for the interval (Syncthing does the same).
    package func announceSoon() { soon = true }

    /// Changes the endpoints announced from the next announcement on.
    package func announce(_ endpoints: Endpoints) {
        self.endpoints = endpoints
    }

    /// Stops announcing and receiving and closes the sockets.
    package func stop() async {
        for t in tasks { t.cancel() }
        tasks = []
        sink?.finish()
        sink = nil
        try? await ipv4?.channel.close()
        try? await ipv6?.channel.close()
        ipv4 = nil
        ipv6 = nil
    }
}

/// Passes received datagrams to an `AsyncStream` (bounded by its buffering policy) that the
/// sockets of both families share; ``LocalDiscovery/stop()`` finishes it.
final class DatagramSink: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation

    init(_ sink: AsyncStream<AddressedEnvelope<ByteBuffer>>.Continuation) { self.sink = sink }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        sink.yield(unwrapInboundIn(data))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram socket stays usable after an error (an ICMP unreachable, say): keep it.
    }
}
