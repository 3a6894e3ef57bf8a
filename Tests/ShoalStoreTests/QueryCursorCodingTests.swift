// QueryCursorCodingTests: a query cursor kept as bytes pages on exactly as the cursor did, and
// bytes that are not a cursor are refused with a typed error, never a trap.

import Testing
import ShoalSamples
import ShoalWire
@testable import ShoalStore

@Suite struct QueryCursorCodingTests {
    /// Paging through the cursor's bytes gives the same pages as paging through the cursor.
    @Test func aCursorKeptAsBytesPagesOnTheSame() async throws {
        let (store, _dir) = try await QueryTests.seeded()
        _ = _dir
        let q = Query(
            recordType: "Note", predicate: .and([.equal("done", .bool(true)), .greater("score", .double(-1))]),
            sortDescriptors: [
                .init(.field("missing"), ascending: false), .init(.field("score")),
                .init(.modificationDate, ascending: false)
            ])
        var page = try await store.records(matching: q, in: notes, resultsLimit: 7)
        var viaBytes = QueryTests.names(page), direct = QueryTests.names(page)
        var cursor = page.cursor
        var pages = 1
        while let c = cursor {
            let bytes = c.encoded()
            let restored = try QueryCursor(decoding: bytes)
            #expect(restored == c, "page \(pages)")
            #expect(restored.encoded() == bytes, "the encoding is canonical")
            page = try await store.records(continuing: restored, resultsLimit: 7)
            viaBytes += QueryTests.names(page)
            direct += QueryTests.names(try await store.records(continuing: c, resultsLimit: 7))
            cursor = page.cursor
            pages += 1
        }
        #expect(pages == 4 && viaBytes == direct && viaBytes.count == 25, "\(pages) pages: \(viaBytes)")
    }

    /// Random bytes, cut cursors, other records and oversized input: each an `invalidArguments`
    /// error (seeded; the seed is printed on failure).
    @Test func bytesThatAreNotACursorAreRefused() async throws {
        let (store, _dir) = try await QueryTests.seeded()
        _ = _dir
        let page = try await store.records(
            matching: Query(recordType: "Note", sortDescriptors: [.init(.field("score"))]), in: notes, resultsLimit: 3)
        let good = try #require(page.cursor).encoded()
        let seed: UInt64 = 0xC0_5E
        var rng = SplitMix64(seed: seed)
        var inputs: [[UInt8]] = [
            [], [UInt8](repeating: 0, count: QueryCursor.maxEncodedBytes + 1), note("x", "not a cursor").encoded()
        ]
        for cut in stride(from: 0, to: good.count, by: max(1, good.count / 40)) {
            inputs.append(Array(good.prefix(cut)))
        }
        for _ in 0..<300 {
            var b = good
            for _ in 0..<Int(rng.next() % 4 + 1) {
                b[Int(rng.next() % UInt64(b.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            inputs.append(b)
            inputs.append((0..<Int(rng.next() % 200)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        }
        var refused = 0
        for (i, bytes) in inputs.enumerated() {
            do {
                let c = try QueryCursor(decoding: bytes)
                // A flipped byte inside a value may still be a valid cursor: it must then run.
                _ = try? await store.records(continuing: c, resultsLimit: 3)
            } catch {
                #expect(error.code == .invalidArguments, "input \(i), seed \(seed): \(error)")
                refused += 1
            }
        }
        #expect(
            refused >= 3 + good.count / max(1, good.count / 40) - 1,
            "seed \(seed): \(refused) of \(inputs.count) refused")
    }
}
