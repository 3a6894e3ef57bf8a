// InterfaceChangeNotifier: on Linux, the kernel's notices that a link or an address changed (rtnetlink).

#if os(Linux)
    import Foundation
    import Glibc
    import Synchronization

    /// Calls `changed` soon after the kernel reports that a network link or address was added,
    /// removed or changed (rtnetlink's link, IPv4 address and IPv6 address groups), so that local
    /// discovery reads the interfaces at once rather than at its next periodic check
    /// (``DiscoveryConfiguration/interfaceCheckInterval``). The notices are not parsed: any of them
    /// means "read the interfaces again". Linux only; elsewhere the periodic check does the job.
    ///
    /// A thread of its own waits in `poll` on the netlink socket and on a pipe that ``stop()``
    /// writes to; it holds no thread of Swift's cooperative pool.
    final class InterfaceChangeNotifier: Sendable {
        /// rtnetlink's multicast groups: RTMGRP_LINK, RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR.
        static let groups: UInt32 = 0x1 | 0x10 | 0x100
        private let stopWriter: Int32
        private let stopped = Atomic(false)

        /// Opens the netlink socket and starts its thread; nil when netlink cannot be used (a
        /// sandbox that forbids it, say): the periodic check then does the job alone.
        init?(changed: @escaping @Sendable () -> Void) {
            // Protocol 0: NETLINK_ROUTE.
            let socket = Glibc.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socket >= 0 else { return nil }
            // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid; __u32 nl_groups; }
            var address = (UInt16(AF_NETLINK), UInt16(0), UInt32(0), Self.groups)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<(UInt16, UInt16, UInt32, UInt32)>.size))
                }
            }
            var pipeEnds: [Int32] = [-1, -1]
            guard bound == 0, pipe(&pipeEnds) == 0 else {
                close(socket)
                return nil
            }
            for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            stopWriter = pipeEnds[1]
            let stopReader = pipeEnds[0]
            let thread = Thread {
                Self.watch(socket, until: stopReader, changed)
                close(socket)
                close(stopReader)
            }
            thread.name = "shoal-netlink"
            thread.start()
        }

        /// Waits for notices until the pipe's reader `stop` becomes readable (or closed); after
        /// each batch, drains the socket and calls `changed` once.
        private static func watch(_ socket: Int32, until stop: Int32, _ changed: @Sendable () -> Void) {
            var fds = [
                pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stop, events: Int16(POLLIN), revents: 0)
            ]
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                fds[0].revents = 0
                fds[1].revents = 0
                let ready = poll(&fds, 2, -1)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if fds[1].revents != 0 || fds[0].revents & Int16(POLLNVAL) != 0 { return }
                // Drain what is queued; ENOBUFS (notices lost to an overrun) means the same: read again.
                while buffer.withUnsafeMutableBytes({ recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0
                {}
                changed()
            }
        }

        /// Stops the thread (it closes the socket); calling it again does nothing.
        func stop() {
            guard !stopped.exchange(true, ordering: .relaxed) else { return }
            var byte: UInt8 = 1
            _ = write(stopWriter, &byte, 1)
            close(stopWriter)
        }

        deinit { stop() }
    }
#endif
