// LocalDiscovery+Sockets: local discovery's sockets — opened, joined to the groups, reopened after failures — and sending.

import Foundation
import Logging
import NIOCore
import NIOPosix
import ShoalWire

extension LocalDiscovery {
    /// One family's sockets. Receiving and sending are apart: NIO closes a datagram socket whose
    /// send fails with some errors (`ENETUNREACH`), and a sending socket costs no membership to
    /// reopen, while the receiving one keeps its joins.
    struct Sockets: Sendable {
        /// Bound to the discovery port on 0.0.0.0 or `::`, the group joined on the interfaces
        /// of `joined`; it only receives.
        var receiver: (any Channel)?
        /// Bound to a port of the kernel's choice; it only sends. Reopened before the next send
        /// once it is closed.
        var sender: (any Channel)?
        /// The interfaces the group is joined on, by interface index, with the address each
        /// join used (a membership is left with that address).
        var joined: [Int: NIONetworkDevice] = [:]

        /// Closes both sockets.
        func closeAll() async {
            try? await receiver?.close()
            try? await sender?.close()
        }
    }

    /// Opens the receiving sockets that are not open: IPv4 always, IPv6 once some interface
    /// has IPv6 multicast. A socket that closed lost its joins; they are made again next.
    func openReceivers() async {
        if ipv4.receiver?.isActive != true {
            try? await ipv4.receiver?.close()
            ipv4.receiver = nil
            ipv4.joined = [:]
            do {
                ipv4.receiver = try await openSocket(ipv6: false, port: configuration.port, receiving: true)
                note(.receiving(ipv6: false), nil, what: "receive announcements over IPv4")
            } catch {
                note(
                    .receiving(ipv6: false), error, what: "receive announcements over IPv4",
                    hint:
                        "another program may hold UDP port \(configuration.port) without SO_REUSEADDR (--discovery-port picks another)"
                )
            }
        }
        if ipv6.receiver?.isActive != true, !interfaces.ipv6Multicast.isEmpty {
            try? await ipv6.receiver?.close()
            ipv6.receiver = nil
            ipv6.joined = [:]
            do {
                ipv6.receiver = try await openSocket(ipv6: true, port: configuration.port, receiving: true)
                note(.receiving(ipv6: true), nil, what: "receive announcements over IPv6")
            } catch {
                note(
                    .receiving(ipv6: true), error, what: "receive announcements over IPv6",
                    hint: "discovery runs over IPv4 meanwhile")
            }
        }
    }

    /// A datagram socket of one family bound to `port` (0: the kernel picks), with
    /// `SO_REUSEADDR` (several nodes on one host share the discovery port, and each gets every
    /// datagram) and `SO_BROADCAST`; a receiving one hands its datagrams, with the interface
    /// each arrived on, to the sink.
    func openSocket(ipv6 isIPv6: Bool, port: Int, receiving: Bool) async throws -> any Channel {
        var bootstrap = DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(
                .recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: DiscoveryAnnouncement.maxBytes + 1))
        if isIPv6 {
            // IPV6_V6ONLY: the IPv6 socket shares the port with the IPv4 one, and receives only IPv6.
            bootstrap = bootstrap.channelOption(
                ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
        } else {
            bootstrap = bootstrap.channelOption(.socketOption(.so_broadcast), value: 1)
        }
        if receiving, let sink {
            bootstrap = bootstrap.channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DatagramSink(sink))
                }
            }
        }
        let channel = try await bootstrap.bind(host: isIPv6 ? "::" : "0.0.0.0", port: port).get()
        if receiving {
            // Which interface each datagram came in on, for `shoal status` (set once bound:
            // NIO needs the socket's family). Without it, discovery works the same.
            try? await channel.setOption(.receivePacketInfo, value: true).get()
        }
        return channel
    }

    /// Joins and leaves each family's group so that it is joined on exactly the interfaces
    /// that support multicast now, and lists where IPv4 broadcasts go: the interfaces without
    /// multicast, and those where the join failed (tried again at the next check).
    func joinGroups() async {
        var broadcasts = interfaces.ipv4BroadcastLinks
        for isIPv6 in [false, true] {
            let family = isIPv6 ? ipv6 : ipv4
            guard let receiver = family.receiver as? any MulticastChannel,
                let group = try? SocketAddress(
                    ipAddress: isIPv6 ? configuration.ipv6Group : configuration.ipv4Group, port: configuration.port)
            else { continue }
            let wanted = isIPv6 ? interfaces.ipv6Multicast : interfaces.ipv4Multicast
            let (leave, join) = DiscoveryInterfaces.changes(joined: family.joined, wanted: wanted, byAddress: !isIPv6)
            var joined = family.joined
            for device in leave {
                // It fails when the interface is gone, which took the membership with it.
                try? await receiver.leaveGroup(group, device: device).get()
                joined[device.interfaceIndex] = nil
            }
            for device in join {
                let what = "join the \(isIPv6 ? "IPv6" : "IPv4") discovery group on \(device.name)"
                do {
                    try await receiver.joinGroup(group, device: device).get()
                    joined[device.interfaceIndex] = device
                    note(.joining(ipv6: isIPv6, interface: device.name), nil, what: what)
                } catch {
                    note(
                        .joining(ipv6: isIPv6, interface: device.name), error, what: what,
                        hint: isIPv6
                            ? "the interface needs a usable IPv6 link-local address"
                            : "announcements go to its broadcast address meanwhile")
                    links[device.name, default: LinkRecord()].lastError = "\(error)"
                }
            }
            if isIPv6 { ipv6.joined = joined } else { ipv4.joined = joined }
        }
        for device in interfaces.ipv4Multicast where ipv4.joined[device.interfaceIndex] == nil {
            if let b = DiscoveryInterfaces.broadcast(of: device), !broadcasts.contains(where: { $0.address == b }) {
                broadcasts.append((device.name, b))
            }
        }
        self.broadcasts = broadcasts
    }

    /// The sending socket of a family, opened when it is not open (never opened, or closed by
    /// a failed send); nil, noted, when it cannot be opened.
    func sender(ipv6 isIPv6: Bool) async -> (any Channel)? {
        let current = isIPv6 ? ipv6.sender : ipv4.sender
        if let current, current.isActive { return current }
        try? await current?.close()
        let what = "send announcements over \(isIPv6 ? "IPv6" : "IPv4")"
        do {
            let channel = try await openSocket(ipv6: isIPv6, port: 0, receiving: false)
            if isIPv6 { ipv6.sender = channel } else { ipv4.sender = channel }
            note(.sending(ipv6: isIPv6), nil, what: what)
            return channel
        } catch {
            if isIPv6 { ipv6.sender = nil } else { ipv4.sender = nil }
            note(.sending(ipv6: isIPv6), error, what: what)
            return nil
        }
    }

    /// Sends the announcement once to every destination: the IPv4 group out of each interface
    /// it is joined on, each broadcast address, and the IPv6 group on each interface it is
    /// joined on. A family with nothing to announce (``Endpoints``) sends nothing.
    func announceOnce() async {
        if !endpoints.ipv4.isEmpty,
            let group = try? SocketAddress(ipAddress: configuration.ipv4Group, port: configuration.port)
        {
            let bytes = DiscoveryAnnouncement(device: device, instance: instance, endpoints: endpoints.ipv4).encoded()
            for device in interfaces.ipv4Multicast where !stopped {
                guard let joinedWith = ipv4.joined[device.interfaceIndex], case .v4(let address)? = joinedWith.address,
                    let channel = await sender(ipv6: false)
                else { continue }
                // IP_MULTICAST_IF: out of this interface, whatever the routing table says (a
                // host without a default route, or with several LANs, still reaches each).
                let outOf: EventLoopFuture<Void>? = (channel as? any SocketOptionProvider)?.setIPMulticastIF(
                    address.address.sin_addr)
                do {
                    try await outOf?.get()
                } catch {
                    record(
                        error, to: "\(configuration.ipv4Group)", on: channel, interface: device.name,
                        hint: "the interface lost its address")
                    continue
                }
                await send(
                    bytes, to: group, on: channel, interface: device.name,
                    hint: "the interface needs to be up with an IPv4 address")
            }
            for (name, broadcast) in broadcasts where !stopped {
                guard let destination = DiscoveryInterfaces.destination(broadcast, port: configuration.port),
                    let channel = await sender(ipv6: false)
                else { continue }
                await send(
                    bytes, to: destination, on: channel, interface: name,
                    hint: "the host needs a route to the interface's subnet: the interface up, with its address")
            }
        }
        if !endpoints.ipv6.isEmpty,
            let group = try? SocketAddress(ipAddress: configuration.ipv6Group, port: configuration.port)
        {
            let bytes = DiscoveryAnnouncement(device: device, instance: instance, endpoints: endpoints.ipv6).encoded()
            for device in interfaces.ipv6Multicast where !stopped && ipv6.joined[device.interfaceIndex] != nil {
                guard
                    let destination = DiscoveryInterfaces.destination(
                        group, port: configuration.port, interface: device.interfaceIndex),
                    let channel = await sender(ipv6: true)
                else { continue }
                await send(
                    bytes, to: destination, on: channel, interface: device.name,
                    hint: "the interface needs a usable IPv6 link-local address")
            }
        }
    }

    /// Sends one datagram out of `interface` and records the outcome there.
    func send(_ bytes: [UInt8], to destination: SocketAddress, on channel: any Channel, interface: String, hint: String)
        async
    {
        let label = "\(destination.ipAddress ?? "\(destination)")"
        do {
            try await channel.writeAndFlush(
                AddressedEnvelope(remoteAddress: destination, data: ByteBuffer(bytes: bytes)))
            sent += 1
            links[interface, default: LinkRecord()].lastSent = Date()
            links[interface]?.lastError = nil
            note(
                .announcing(to: label, interface: interface), nil,
                what: "send the announcement to \(label) on \(interface)")
        } catch {
            record(error, to: label, on: channel, interface: interface, hint: hint)
        }
    }

    /// Records a failed send: logged when the failure begins or changes; a socket NIO closed
    /// for it is reopened before the next send.
    func record(_ error: any Error, to label: String, on channel: any Channel, interface: String, hint: String) {
        links[interface, default: LinkRecord()].lastError = "\(error)"
        note(
            .announcing(to: label, interface: interface), error,
            what: "send the announcement to \(label) on \(interface)", hint: hint)
        if !channel.isActive {
            // The interfaces likely changed: read them again soon rather than at the next check.
            recheck = true
        }
    }
}
