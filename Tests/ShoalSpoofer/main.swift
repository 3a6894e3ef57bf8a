// shoal-spoofer: answers every discovery announcement it hears with the same device ID at its own
// address, for the forged-announcement test (Spec/discovery.md §5). Test support, not a product.
//
// Usage: shoal-spoofer … spoof --address A --seconds N [--fresh-instance] [--group G] [--port P] [--tcp-port T]
// (anything before `spoof` is ignored, so the tests' daemon launcher can start it). Binds the
// discovery port on 0.0.0.0, joins the IPv4 group on the interface holding address A, and for each
// valid announcement from another host sends one naming the same device — with the same instance
// number, or a new random one with --fresh-instance — whose only endpoint is "the datagram's
// source" (its own address) and port T (default 7400). Prints one line per datagram heard:
// `heard <unix seconds> <source address> <device hex prefix>`, and `answered …` per reply.
// Exits after N seconds (at most 600).

import ShoalWire
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a line straight to file descriptor 1 (a pipe: nothing buffered is lost at exit).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var off = 0
    while off < bytes.count {
        let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + off, $0.count - off) }
        if n <= 0 { exit(3) }
        off += n
    }
}

func fail(_ what: String) -> Never {
    say("error: \(what) (errno \(errno))")
    exit(2)
}

func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_REALTIME, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

let args = Array(CommandLine.arguments.drop { $0 != "spoof" }.dropFirst())
func option(_ name: String, _ args: [String]) -> String? {
    guard let i = args.firstIndex(of: name), i + 1 < args.count else { return nil }
    return args[i + 1]
}
guard let own = option("--address", args), let seconds = option("--seconds", args).flatMap(Double.init), seconds > 0,
    seconds <= 600
else {
    say("usage: shoal-spoofer spoof --address A --seconds N [--fresh-instance] [--group G] [--port P] [--tcp-port T]")
    exit(2)
}
let fresh = args.contains("--fresh-instance")
let group = option("--group", args) ?? "239.255.83.72"
let port = UInt16(option("--port", args) ?? "21047") ?? 21047
let tcpPort = UInt16(option("--tcp-port", args) ?? "7400") ?? 7400

func ipv4(_ text: String) -> in_addr {
    var a = in_addr()
    guard inet_pton(AF_INET, text, &a) == 1 else { fail("not an IPv4 address: \(text)") }
    return a
}

#if canImport(Glibc)
    let datagram = Int32(SOCK_DGRAM.rawValue)
#else
    let datagram = SOCK_DGRAM
#endif
let fd = socket(AF_INET, datagram, 0)
guard fd >= 0 else { fail("socket") }
var one: Int32 = 1, zero: UInt8 = 0
setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
var bindAddress = sockaddr_in()
bindAddress.sin_family = sa_family_t(AF_INET)
bindAddress.sin_port = port.bigEndian
bindAddress.sin_addr.s_addr = 0
let bound = withUnsafePointer(to: &bindAddress) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
}
guard bound == 0 else { fail("bind port \(port)") }
var membership = ip_mreq(imr_multiaddr: ipv4(group), imr_interface: ipv4(own))
guard setsockopt(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &membership, socklen_t(MemoryLayout<ip_mreq>.size)) == 0
else { fail("join \(group)") }
var outInterface = ipv4(own)
setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &outInterface, socklen_t(MemoryLayout<in_addr>.size))
// Its own answers are not heard back (they would be answered in turn).
setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, &zero, socklen_t(MemoryLayout<UInt8>.size))
var destination = sockaddr_in()
destination.sin_family = sa_family_t(AF_INET)
destination.sin_port = port.bigEndian
destination.sin_addr = ipv4(group)
let ownAddress = ipv4(own).s_addr
say("spoofing on \(own), group \(group):\(port), for \(seconds) s, \(fresh ? "fresh" : "same") instance numbers")

let deadline = now() + seconds
var buffer = [UInt8](repeating: 0, count: DiscoveryAnnouncement.maxBytes + 1)
while now() < deadline {
    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let waitMs = Int32(max(1, min(500, (deadline - now()) * 1000)))
    guard poll(&poller, 1, waitMs) > 0 else { continue }
    var source = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let n = buffer.withUnsafeMutableBytes { b in
        withUnsafeMutablePointer(to: &source) { s in
            s.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress, b.count, 0, $0, &length) }
        }
    }
    guard n > 0, source.sin_addr.s_addr != ownAddress else { continue }
    var text = [CChar](repeating: 0, count: 64)
    var sourceAddress = source.sin_addr
    inet_ntop(AF_INET, &sourceAddress, &text, socklen_t(text.count))
    let from = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let heard = try? DiscoveryAnnouncement(decoding: Array(buffer.prefix(n))) else {
        say("refused \(now()) \(from)")
        continue
    }
    let device = String(heard.device.hex.prefix(8))
    say("heard \(now()) \(from) \(device)")
    let forged = DiscoveryAnnouncement(
        device: heard.device, instance: fresh ? UInt64.random(in: 1...UInt64.max) : heard.instance,
        endpoints: [.init(host: .source, port: tcpPort)])
    let bytes = forged.encoded()
    let sent = bytes.withUnsafeBytes { b in
        withUnsafePointer(to: &destination) { d in
            d.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
    say(sent == bytes.count ? "answered \(now()) \(device)" : "could not answer \(now()) errno \(errno)")
}
close(fd)
say("done")
