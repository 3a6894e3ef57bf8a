// RowBatch: a page of stored rows copied out of SQLite, decoded into records on every core.

import Dispatch
import ShoalWire
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Rows read from one statement — names and canonical bytes, packed in one buffer — so the
/// decoding, the bulk of a page's cost, can run in parallel once the statement is done.
struct RowBatch {
    private(set) var names: [String] = []
    private var bytes: [UInt8] = []
    /// `ends[i]` is where row `i`'s bytes end in `bytes`.
    private var ends: [Int] = []

    var count: Int { names.count }
    /// Every row's bytes, back to back in row order.
    var packedBytes: [UInt8] { bytes }
    /// Where each row's bytes end in ``packedBytes``.
    var rowEnds: [Int] { ends }

    init(capacity: Int) {
        names.reserveCapacity(capacity)
        ends.reserveCapacity(capacity)
        bytes.reserveCapacity(capacity * 256)
    }

    /// Appends the row named `name` whose bytes are `raw` (copied).
    mutating func append(name: String, bytes raw: UnsafeRawBufferPointer) {
        names.append(name)
        bytes.append(contentsOf: raw)
        ends.append(bytes.count)
    }

    /// Rows below this many are decoded on the calling thread: splitting costs more than it saves.
    static let parallelThreshold = 512

    /// Every row decoded as a record of `zone` (``Store/decodeRow(_:zone:name:limits:)``: a
    /// damaged row is `internalError`), in row order. Large batches are split across the cores.
    func decode(zone: RecordZone.ID, limits: WireLimits, parallel: Bool = true) throws(ShoalError) -> [Record] {
        let n = count
        if n == 0 { return [] }
        let parts =
            !parallel || n < Self.parallelThreshold ? 1 : min(System.coreCount * 2, n / (Self.parallelThreshold / 2))
        // Each part decodes rows lo..<hi straight into the result's storage, stopping at its first
        // damaged row; `reached[p]` is how far part p initialised, `failures[p]` its error.
        var reached = [Int](repeating: 0, count: parts)
        var failures = [ShoalError?](repeating: nil, count: parts)
        let ends = self.ends, names = self.names
        let records = [Record](unsafeUninitializedCapacity: n) { buffer, initialized in
            bytes.withUnsafeBytes { allBytes in
                reached.withUnsafeMutableBufferPointer { reachedBuffer in
                    failures.withUnsafeMutableBufferPointer { failureBuffer in
                        // Parts touch disjoint slots of every buffer: no sharing between threads.
                        nonisolated(unsafe) let all = allBytes, out = buffer
                        nonisolated(unsafe) let reachedOut = reachedBuffer, failureOut = failureBuffer
                        let decodePart = { @Sendable (part: Int) in
                            let lo = n * part / parts, hi = n * (part + 1) / parts
                            guard let base = out.baseAddress else { return }
                            var i = lo
                            while i < hi {
                                let start = i == 0 ? 0 : ends[i - 1]
                                let raw = UnsafeRawBufferPointer(rebasing: all[start..<ends[i]])
                                do throws(ShoalError) {
                                    (base + i).initialize(
                                        to: try Store.decodeRow(raw, zone: zone, name: names[i], limits: limits))
                                } catch {
                                    failureOut[part] = error
                                    break
                                }
                                i += 1
                            }
                            reachedOut[part] = i
                        }
                        if parts == 1 {
                            decodePart(0)
                        } else {
                            DispatchQueue.concurrentPerform(iterations: parts, execute: decodePart)
                        }
                    }
                }
            }
            if failures.allSatisfy({ $0 == nil }) {
                initialized = n
            } else if let base = buffer.baseAddress {
                for part in 0..<parts {
                    let lo = n * part / parts
                    (base + lo).deinitialize(count: reached[part] - lo)
                }
                initialized = 0
            }
        }
        if let first = failures.first(where: { $0 != nil }), let error = first { throw error }
        return records
    }
}

/// Decodes pages of rows on other threads while the statement reads the next (``Store``'s change
/// feed): `add` starts decoding a batch, `finish` waits and returns every row in order.
final class PipelinedDecode: @unchecked Sendable {
    private let zone: RecordZone.ID
    private let limits: WireLimits
    private let group = DispatchGroup()
    /// One slot per batch, each written once by its decoding thread before `group` is left.
    private var results: [UnsafeMutablePointer<Result<[Record], ShoalError>?>] = []

    init(zone: RecordZone.ID, limits: WireLimits) {
        self.zone = zone
        self.limits = limits
    }

    deinit {
        for r in results {
            r.deinitialize(count: 1)
            r.deallocate()
        }
    }

    /// Starts decoding `batch` on a global queue.
    func add(_ batch: RowBatch) {
        let slot = UnsafeMutablePointer<Result<[Record], ShoalError>?>.allocate(capacity: 1)
        slot.initialize(to: nil)
        results.append(slot)
        nonisolated(unsafe) let out = slot
        let zone = self.zone, limits = self.limits
        DispatchQueue.global().async(group: group) {
            do throws(ShoalError) {
                out.pointee = .success(try batch.decode(zone: zone, limits: limits, parallel: false))
            } catch {
                out.pointee = .failure(error)
            }
        }
    }

    /// Every batch's records in order, once all are decoded; `last`, if any, is decoded on the
    /// calling thread meanwhile. The first damaged row's error is thrown.
    func finish(decodingHere last: RowBatch?) throws(ShoalError) -> [Record] {
        let tail: Result<[Record], ShoalError>
        do throws(ShoalError) {
            tail = .success(try last?.decode(zone: zone, limits: limits, parallel: false) ?? [])
        } catch {
            tail = .failure(error)
        }
        group.wait()
        var out = [Record]()
        for r in results {
            switch r.pointee {
            case .success(let records)?:
                if out.isEmpty { out = records } else { out.append(contentsOf: records) }
            case .failure(let e)?: throw e
            case nil: throw .internalError("a change-feed page was not decoded")
            }
        }
        switch tail {
        case .success(let records): out.append(contentsOf: records)
        case .failure(let e): throw e
        }
        return out
    }
}

/// The machine's processor count, read once.
enum System {
    static let coreCount = max(1, ProcessInfo.processInfo.activeProcessorCount)
}
