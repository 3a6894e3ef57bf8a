// AssetFetchesTests: how an asset fetch moves between peers, requests its chunks and ends, without the actor.

import Testing
@testable import ShoalSync
import ShoalWire
import Synchronization

@Suite struct AssetFetchesTests {
    static let asset = Asset(hash: ContentHash(bytes: [UInt8](repeating: 7, count: 32))!, size: 1 << 20)
    static let first = ConnectionID(rawValue: 1)
    static let second = ConnectionID(rawValue: 2)
    static let peer = NodeID(high: 5, low: 5)

    static func chunkRuns(_ requests: [AssetRequestMessage]) -> [[UInt64]] {
        requests.map {
            guard case let .chunks(first, count) = $0.part else { return [] }
            return [first, count]
        }
    }

    /// The window bounds the chunks in flight; requests go in runs of consecutive indexes, and
    /// each stored chunk makes room for the next.
    @Test func chunksAreRequestedInRunsWithinTheWindow() {
        var fetches = AssetFetches()
        #expect(fetches.want(Self.asset) == true, "nobody is asked yet")
        fetches.claim(Self.asset, for: Self.first)
        #expect(fetches.want(Self.asset) == false, "under way: wanting it again asks nobody else")
        fetches.noteMissing([0, 1, 2, 5, 6, 7, 8], of: Self.asset)
        #expect(Self.chunkRuns(fetches.nextRequests(Self.asset, window: 4)) == [[0, 3], [5, 1]])
        #expect(fetches.nextRequests(Self.asset, window: 4).isEmpty, "the window is full")
        #expect(fetches.chunksLacking[Self.asset] == 7)

        fetches.noteStored([0, 1], of: Self.asset)
        #expect(Self.chunkRuns(fetches.nextRequests(Self.asset, window: 4)) == [[6, 2]])
        fetches.noteStored([2, 5, 6, 7], of: Self.asset)
        #expect(!fetches.hasAllChunks(Self.asset))
        #expect(Self.chunkRuns(fetches.nextRequests(Self.asset, window: 4)) == [[8, 1]])
        fetches.noteStored([8], of: Self.asset)
        #expect(fetches.hasAllChunks(Self.asset))
    }

    /// A peer that refuses is never asked again; a refusal on a connection the transfer has left
    /// changes nothing; a closed connection parks its transfers.
    @Test func aRefusingPeerIsNotAskedAgainAndAClosedConnectionParks() {
        var fetches = AssetFetches()
        _ = fetches.want(Self.asset)
        fetches.claim(Self.asset, for: Self.first)
        fetches.noteManifestRequested(Self.asset)
        #expect(fetches.awaitsManifest(Self.asset))
        #expect(fetches.refuse(Self.asset, on: Self.second, peer: Self.peer) == false, "not asked there")
        #expect(fetches.refusers(of: Self.asset) == [])
        #expect(fetches.refuse(Self.asset, on: Self.first, peer: Self.peer) == true)
        #expect(fetches.refusers(of: Self.asset) == [Self.peer] && fetches.isAsking(Self.asset, on: nil))

        fetches.claim(Self.asset, for: Self.second)
        #expect(!fetches.awaitsManifest(Self.asset), "a new peer starts from nothing requested")
        fetches.noteMissing([0, 1], of: Self.asset)
        _ = fetches.nextRequests(Self.asset, window: 8)
        fetches.parkAll(on: Self.second)
        #expect(fetches.isAsking(Self.asset, on: nil) && fetches.assets(on: nil) == [Self.asset])
        #expect(fetches.chunksLacking[Self.asset] == 0, "what was requested is asked again of the next peer")
    }

    /// Chunks found damaged once the whole is checked are asked again a bounded number of times.
    @Test func damagedChunksAreRepairedABoundedNumberOfTimes() {
        var fetches = AssetFetches()
        _ = fetches.want(Self.asset)
        fetches.claim(Self.asset, for: Self.first)
        for _ in 0..<AssetFetches.maxRepairs {
            #expect(fetches.repair(Self.asset, on: Self.first, missing: [3]) == true)
            #expect(Self.chunkRuns(fetches.nextRequests(Self.asset, window: 4)) == [[3, 1]])
        }
        #expect(fetches.repair(Self.asset, on: Self.first, missing: [3]) == false, "repairs used up")
        #expect(fetches.repair(Self.asset, on: Self.second, missing: [3]) == false)
    }

    /// A failure with nobody waiting is told to the next wait, once; one with waiters is thrown
    /// to them.
    @Test func aFailureReachesTheWaitersOrTheNextWait() async {
        var fetches = AssetFetches()
        let error = AssetFetchError(code: .assetNotAvailable, asset: Self.asset, message: "none")
        _ = fetches.want(Self.asset)
        fetches.fail(Self.asset, error)
        #expect(fetches.transfers.isEmpty)
        #expect(fetches.takeFailure(of: Self.asset) == error)
        #expect(fetches.takeFailure(of: Self.asset) == nil, "told once")

        let box = FetchesBox()
        let waiting = Task {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                box.with { $0.wait(for: Self.asset, ticket: $0.nextTicket(), c) }
            }
        }
        while !box.with({ $0.isAwaited(Self.asset) }) { await Task.yield() }
        box.with { $0.fail(Self.asset, error) }
        await #expect(throws: AssetFetchError.self) { try await waiting.value }
        #expect(box.with { $0.takeFailure(of: Self.asset) } == nil, "the waiter had it")
    }

    /// A cancelled waiter stops alone; the others go on waiting until the asset is held.
    @Test func aCancelledWaiterStopsAloneAndTheOthersReturnOnCompletion() async {
        let box = FetchesBox()
        let tickets = box.with { [$0.nextTicket(), $0.nextTicket()] }
        #expect(tickets[0] != tickets[1])
        let tasks = tickets.map { ticket in
            Task {
                try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                    box.with { $0.wait(for: Self.asset, ticket: ticket, c) }
                }
            }
        }
        while box.with({ $0.transfers[Self.asset]?.waiters.count ?? 0 }) < 2 { await Task.yield() }
        box.with { $0.cancelWait(for: Self.asset, ticket: tickets[0]) }
        await #expect(throws: CancellationError.self) { try await tasks[0].value }
        #expect(box.with { $0.isAwaited(Self.asset) })
        box.with { $0.complete(Self.asset) }
        await #expect(throws: Never.self) { try await tasks[1].value }
        #expect(box.with { $0.transfers.isEmpty })
    }

    /// Whether an asset compresses is tried once and remembered.
    @Test func compressibilityIsTriedOnce() {
        var fetches = AssetFetches()
        let text = [UInt8](repeating: 65, count: 4096)
        var noise = [UInt8](repeating: 0, count: 4096)
        var x: UInt32 = 12345
        for i in noise.indices {
            x = x &* 1_103_515_245 &+ 12345
            noise[i] = UInt8(truncatingIfNeeded: x >> 16)
        }
        #expect(fetches.compressibility(of: Self.asset, sample: text) == true)
        #expect(fetches.compressibility(of: Self.asset, sample: noise) == true, "remembered from the first trial")
        let other = Asset(hash: ContentHash(bytes: [UInt8](repeating: 8, count: 32))!, size: 4096)
        #expect(fetches.compressibility(of: other, sample: noise) == false)
    }
}

/// An ``AssetFetches`` that tasks in a test share.
final class FetchesBox: Sendable {
    private let value = Mutex(AssetFetches())

    func with<T>(_ body: (inout AssetFetches) -> T) -> T { value.withLock { body(&$0) } }
}
