// DiscoverySpoofingTests: a host answering every announcement with forged ones never cuts a working link, nor makes the nodes announce on and on.

import Foundation
import Testing

/// The forged-announcement attack of Spec/discovery.md §5, on a LAN of network namespaces set
/// up as in ``DiscoveryNamespaceTests``: two `shoal serve` daemons that trust each other by device
/// ID alone and find each other by discovery, and a third host, `shoal-spoofer`, that answers
/// every announcement it hears with one naming the same device (and the same instance number, or
/// a new one each time) at its own address. Records written on either node keep crossing to the
/// other within a bound far below the interval while it runs, and the announcements the spoofer
/// hears stay within a bound derived from the interval (§4.1's rate limits).
///
/// Needs root and iproute2 (`ip netns`); anywhere else the tests are skipped, with the reason printed.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DiscoverySpoofingTests {
    /// The announcement interval of both nodes, seconds.
    static let interval = 5.0
    /// Records written while the spoofer runs, alternately on each node, one every `spacing` s.
    static let records = 6
    static let spacing = 4.0
    /// Most seconds a record may take to reach the other node: far below the interval, so a
    /// link that had to wait for an announcement to be redialled would not make it.
    static let crossingBound = 3.0

    /// Where `shoal-spoofer` is: next to the `shoal` binary (both are built by `swift build`).
    static let spoofer: String? = Shoal.binary.map {
        URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("shoal-spoofer").path
    }.flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }

    static let unavailable: String? = {
        if let reason = DiscoveryNamespaceTests.unavailable { return reason }
        if spoofer == nil {
            print("DiscoverySpoofingTests skipped: shoal-spoofer was not built")
            return "shoal-spoofer was not built"
        }
        return nil
    }()

    @Test(
        .enabled(if: unavailable == nil, "needs root, `ip netns` and shoal-spoofer (see the printed reason)"),
        arguments: [false, true])
    func aSpoofedAnnouncementNeverCutsAWorkingLink(freshInstances: Bool) async throws {
        let ip = try #require(DiscoveryNamespaceTests.ipTool)
        let spoofer = try #require(Self.spoofer)
        let lan = Lan(ip: ip, nodes: 3)
        defer { lan.tearDown() }
        try await lan.setUp()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("shoal-disc-spoof-\(lan.tag)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (dirs, _) = try await DiscoveryNamespaceTests.twoNodesSharingARecord(root)
        let test = freshInstances ? "spoofed_fresh_instance" : "spoofed_same_instance"
        try await Shoal.withDaemons { daemons in
            var nodes = [Shoal.Daemon]()
            for i in 0..<2 {
                let d = try daemons.start(
                    ["--data", dirs[i], "--listen", "0.0.0.0:7400", "--discovery-interval", "\(Int(Self.interval))"],
                    wrapper: [ip, "netns", "exec", lan.namespace(i)])
                #expect(
                    await Shoal.eventually(30) { d.log.contains("local discovery on") },
                    "discovery did not start: \(d.log)")
                nodes.append(d)
            }
            let first = try await Shoal.eventually(40) {
                try await DiscoveryNamespaceTests.has(dirs[1], "first", "before-start")
            }
            #expect(first, "A and B never synced: \(nodes.map(\.log))")
            // The usual time, before any forged announcement.
            var usual = [Double]()
            for k in 0..<2 { usual.append(try await Self.cross(dirs, from: k % 2, name: "usual-\(k)")) }

            // The spoofer, on the third host of the LAN, from now on (bounded by its own clock too).
            let fake = try daemons.start(
                ["--address", Lan.address(2), "--seconds", "120"] + (freshInstances ? ["--fresh-instance"] : []),
                wrapper: [ip, "netns", "exec", lan.namespace(2), spoofer], command: "spoof")
            #expect(
                await Shoal.eventually(10) { fake.log.contains("spoofing on") },
                "the spoofer did not start: \(fake.log)")
            // Let it answer a round of announcements before the window opens.
            try await Task.sleep(for: .seconds(Self.interval + 1))

            let opened = Date()
            var seconds = [Double]()
            for k in 0..<Self.records {
                let started = Date()
                seconds.append(try await Self.cross(dirs, from: k % 2, name: "spoofed-\(k)"))
                let rest = Self.spacing - Date().timeIntervalSince(started)
                if rest > 0 { try await Task.sleep(for: .seconds(rest)) }
            }
            let closed = Date()
            let window = closed.timeIntervalSince(opened)

            // What the spoofer heard from the two nodes in the window, and what it answered.
            let lines = fake.log.split(separator: "\n")
            func count(_ word: String) -> Int {
                lines.filter { line in
                    let parts = line.split(separator: " ")
                    guard parts.count >= 2, parts[0] == word, let t = Double(parts[1]) else { return false }
                    return t >= opened.timeIntervalSince1970 && t <= closed.timeIntervalSince1970
                }.count
            }
            let heard = count("heard"), answered = count("answered")
            // Each node announces every interval: at most ⌊W/I⌋ + 1 times in a window W, and one
            // more for the jitter of the times at its edges. A forged announcement with a new
            // instance may make it reply, at most once per device per interval: as many again.
            // Same instances make it reply never. (Replying to each forgery, a node would send
            // one a second: about W each.)
            let rounds = Int((window / Self.interval).rounded(.down)) + 2
            let bound = 2 * rounds * (freshInstances ? 2 : 1)
            let worst = seconds.max() ?? .infinity
            print(
                "DISCOVERY_METRIC {\"test\":\"\(test)\",\"interval_s\":\(Int(Self.interval)),\"records\":\(seconds.count),"
                    + "\"usual_record_to_synced_s_max\":\(String(format: "%.2f", usual.max() ?? -1)),"
                    + "\"spoofed_record_to_synced_s_max\":\(String(format: "%.2f", worst)),"
                    + "\"spoofed_record_to_synced_s\":[\(seconds.map { String(format: "%.2f", $0) }.joined(separator: ","))],"
                    + "\"window_s\":\(String(format: "%.1f", window)),\"announcements_heard_by_spoofer\":\(heard),"
                    + "\"announcements_bound\":\(bound),\"forged_answers_sent\":\(answered)}")
            // The attack ran: the spoofer heard the nodes' regular announcements and answered each.
            #expect(
                heard >= 2 * (rounds - 3) && answered == heard,
                "the spoofer heard \(heard) and answered \(answered): \(fake.log)")
            #expect(
                worst <= Self.crossingBound,
                "records took \(seconds) s to cross while the spoofer ran (usual: \(usual)): \(nodes.map(\.log))")
            #expect(
                heard <= bound,
                "the nodes sent \(heard) announcements in \(window) s with an interval of \(Self.interval) s (bound \(bound))"
            )
        }
    }

    /// Writes record `name` on node `from` (0 or 1) and returns the seconds until the other node
    /// has it (bounded: 15 s; a record that never crosses counts as 99).
    static func cross(_ dirs: [String], from: Int, name: String) async throws -> Double {
        let started = Date()
        let put = try await Shoal.run(["put", "notes", name, "--type", "Note", "v=\(name)", "--data", dirs[from]])
        #expect(put.status == 0, "\(put.error)")
        let crossed = try await Shoal.eventually(15) {
            try await DiscoveryNamespaceTests.has(dirs[1 - from], name, name)
        }
        return crossed ? Date().timeIntervalSince(started) : 99
    }
}
