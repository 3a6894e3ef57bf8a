// SyncBenchmark+LargeFieldEdit: the `large-field-edit` case — what a subscriber receives for a small
// edit of a 100 KiB field, sent as a delta slot and, in the same run, whole.

import Foundation
import Shoal
import ShoalSamples

extension SyncBenchmark {
    /// The field's type: a text of varied lines, pseudo-random bytes, or a list of int64.
    enum LargeFieldKind: String, CaseIterable {
        case text, bytes, list
    }

    /// The edit: one character, byte or element changed in the middle; a 40-byte run (5 elements)
    /// replaced in the middle; 40 bytes (5 elements) appended.
    enum LargeFieldEdit: String, CaseIterable {
        case oneChar = "one-char", sentence, append
    }

    /// Whether the receiver stays connected through the edit, or is offline while it is saved
    /// and catches up when it reconnects.
    enum LargeFieldLink: String, CaseIterable {
        case live, reconnect
    }

    /// What the receiver got for one edit.
    struct EditTraffic {
        /// Payload bytes of the `changes` batches received (`SyncNode.Statistics.bytesReceived`).
        var payload: Int
        /// Bytes the transport read (frames as they travel, compressed).
        var compressed: Int
        /// Batches received.
        var batches: Int
        /// Delta slots applied, and records asked for whole.
        var deltasApplied: Int, wantedWhole: Int
    }

    static let largeFieldBytes = 100 * 1024
    static let largeFieldName = "body"
    static let recordType = "Document"

    /// The record each measurement edits (every sparse record carries its name and type).
    static func recordName(_ kind: LargeFieldKind, _ edit: LargeFieldEdit, _ link: LargeFieldLink) -> String {
        "large-\(kind.rawValue)-\(edit.rawValue)-\(link.rawValue)"
    }

    /// The field's first value: 100 KiB of ASCII lines of 4 to 15 words, 100 KiB from SplitMix64,
    /// or 12,800 int64 whose zigzag varints take 8 bytes each (100 KiB of payload).
    static func largeValue(_ kind: LargeFieldKind) -> FieldValue {
        var rng = SplitMix64(seed: 0x1A76_E000)
        switch kind {
        case .text:
            var text = [UInt8]()
            text.reserveCapacity(largeFieldBytes + 128)
            while text.count < largeFieldBytes {
                text += NotesCorpus.sentence(words: 4 + Int(rng.next() % 12), using: &rng).utf8
                text.append(UInt8(ascii: "\n"))
            }
            return .string(String(decoding: text.prefix(largeFieldBytes), as: UTF8.self))
        case .bytes:
            return .bytes((0..<largeFieldBytes).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        case .list:
            return .list(.int64((0..<largeFieldBytes / 8).map { _ in element(&rng) }))
        }
    }

    /// An int64 in [2⁴⁸, 2⁵⁴ + 2⁴⁸): its zigzag varint takes 8 bytes.
    static func element(_ rng: inout SplitMix64) -> Int64 {
        Int64(1 << 48) + Int64(rng.next() % (1 << 54))
    }

    /// A value's bytes: a text's UTF-8 bytes, a bytes value's, an int64 list's zigzag varints.
    static func valueBytes(_ value: FieldValue) -> Int {
        switch value {
        case .string(let s): return s.utf8.count
        case .bytes(let b): return b.count
        case .list(.int64(let l)):
            return l.reduce(0) { n, x in
                n + (64 - ((UInt64(bitPattern: x) << 1) ^ UInt64(bitPattern: x >> 63)).leadingZeroBitCount + 6) / 7
            }
        default: return 0
        }
    }

    /// `value` with `edit` made in the middle (or at the end).
    static func edited(_ value: FieldValue, _ edit: LargeFieldEdit) -> FieldValue {
        var rng = SplitMix64(seed: 0xED17)
        let run = Array("and the river ran past the kitchen door.".utf8)  // 40 bytes
        func bytes(_ b: [UInt8]) -> [UInt8] {
            var b = b
            let mid = b.count / 2
            switch edit {
            case .oneChar: b[mid] = b[mid] == UInt8(ascii: "x") ? UInt8(ascii: "y") : UInt8(ascii: "x")
            case .sentence: b.replaceSubrange(mid..<mid + run.count, with: run)
            case .append: b += run
            }
            return b
        }
        switch value {
        case .string(let s):
            return .string(String(decoding: bytes(Array(s.utf8)), as: UTF8.self))
        case .bytes(let b):
            return .bytes(bytes(b))
        case .list(.int64(var l)):
            let mid = l.count / 2
            switch edit {
            case .oneChar: l[mid] &+= 1
            case .sentence: l.replaceSubrange(mid..<mid + 5, with: (0..<5).map { _ in element(&rng) })
            case .append: l += (0..<5).map { _ in element(&rng) }
            }
            return .list(.int64(l))
        default:
            return value
        }
    }

    /// `large-field-edit`: for each kind, edit and link, the bytes the receiver gets for one edit
    /// of a 100 KiB field, with delta slots and then with `fieldDeltas` off on both nodes.
    static func runLargeFieldEdit() async throws {
        var asEdit = [String: EditTraffic](), whole = [String: EditTraffic]()
        for deltas in [true, false] {
            let results = try await largeFieldEdits(fieldDeltas: deltas)
            if deltas { asEdit = results } else { whole = results }
        }
        for kind in LargeFieldKind.allCases {
            let size = valueBytes(largeValue(kind))
            for link in LargeFieldLink.allCases {
                for edit in LargeFieldEdit.allCases {
                    let key = "\(kind.rawValue)/\(edit.rawValue)/\(link.rawValue)"
                    guard let d = asEdit[key], let w = whole[key] else { continue }
                    let names = recordName(kind, edit, link).utf8.count + recordType.utf8.count
                    print(
                        "sync case=large-field-edit kind=\(kind.rawValue) edit=\(edit.rawValue) link=\(link.rawValue) field_bytes=\(size)"
                            + " wire_bytes=\(d.payload) compressed_bytes=\(d.compressed) whole_wire_bytes=\(w.payload) whole_compressed_bytes=\(w.compressed)"
                            + " ratio=\(fixed(Double(d.payload) / Double(w.payload), 4)) batches=\(d.batches) deltas_applied=\(d.deltasApplied) wanted_whole=\(d.wantedWhole)"
                            + " name_bytes=\(names)")
                }
            }
        }
    }

    /// One pass of the case with `fieldDeltas` set as given on both nodes: A owns the zone and
    /// holds one record per kind, edit and link; B dials A. Returns B's traffic per
    /// "kind/edit/link".
    static func largeFieldEdits(fieldDeltas: Bool) async throws -> [String: EditTraffic] {
        var configuration = syncConfiguration
        configuration.fieldDeltas = fieldDeltas
        let (a, aDir) = try await temporaryNode("edit-a", sync: configuration),
            (b, bDir) = try await temporaryNode("edit-b", sync: configuration)
        defer { for d in [aDir, bDir] { try? FileManager.default.removeItem(atPath: d) } }
        try await a.createZone(zone)
        try await pair(a, b)
        try await a.shareZone(zone, with: b.deviceID, role: .readWrite)
        let portA = try await a.listen(host: "127.0.0.1", port: 0)
        _ = try await b.listen(host: "127.0.0.1", port: 0)
        await b.connect(to: "127.0.0.1", port: portA)

        // Every record first, synced whole: the edits then have a base on both sides.
        func recordID(_ kind: LargeFieldKind, _ edit: LargeFieldEdit, _ link: LargeFieldLink) -> Record.ID {
            Record.ID(name: recordName(kind, edit, link), zone: zone)
        }
        var originals = [Record]()
        for kind in LargeFieldKind.allCases {
            let value = largeValue(kind)
            for link in LargeFieldLink.allCases {
                for edit in LargeFieldEdit.allCases {
                    var r = Record(recordType: recordType, id: recordID(kind, edit, link))
                    r["title"] = .string("\(kind.rawValue) \(edit.rawValue) \(link.rawValue)")
                    r[largeFieldName] = value
                    originals.append(r)
                }
            }
        }
        try await a.store.modify(saving: originals, policy: .changedKeys, atomically: false)
        try await waitUntil("B holds the \(originals.count) large records", a, b) {
            await b.sync.statistics.recordsReceived >= originals.count
        }
        try await checkDigests(a, b, "after the large records' first sync")

        var results = [String: EditTraffic]()
        for kind in LargeFieldKind.allCases {
            let value = largeValue(kind)
            for link in LargeFieldLink.allCases {
                for edit in LargeFieldEdit.allCases {
                    let explain = fieldDeltas && kind == .text && edit == .oneChar
                    let traffic = try await measureEdit(
                        a, b, recordID(kind, edit, link), to: edited(value, edit), link: link, explain: explain)
                    results["\(kind.rawValue)/\(edit.rawValue)/\(link.rawValue)"] = traffic
                }
            }
        }
        await a.shutdown(); await b.shutdown()
        return results
    }

    /// Saves `value` into record `id` on A and returns what B received until it holds it.
    /// `reconnect`: B goes offline before the save and online after it (the transport's counter
    /// starts again with the new connection, so `compressed` counts all B read on it).
    /// `explain`: prints (`#`) the parts of the batch that carried it, rebuilt with the public
    /// encoders (``batchParts(previous:edited:base:stated:token:link:)``).
    static func measureEdit(
        _ a: ShoalNode, _ b: ShoalNode, _ id: Record.ID, to value: FieldValue, link: LargeFieldLink,
        explain: Bool = false
    ) async throws -> EditTraffic {
        if link == .reconnect { await b.goOffline() }
        let base = await b.sync.knowledge(of: zone)
        let previous = try await a.record(for: id)
        // The token B holds for A's zone (what A's batches state), as SyncNode keys it.
        let positionKey = SyncStateKey.position(peer: a.nodeID, zone: zone)
        let tokenBefore = explain ? try await b.store.syncValue(positionKey) ?? [] : []
        let before = await b.sync.statistics
        let wireBefore = link == .live ? await b.traffic().bytesReceived : 0
        var r = try await a.record(for: id)
        r[largeFieldName] = value
        try await a.save(r, policy: .changedKeys)
        if link == .reconnect { try await b.goOnline() }
        try await waitUntil("B holds the edit of \(id.name)", a, b) {
            (try? await b.record(for: id))?[largeFieldName] == value
        }
        // What follows the batch that carried the edit (a caught-up batch) arrives too.
        var last = await b.sync.statistics.bytesReceived
        for _ in 0..<50 {
            try await Task.sleep(for: .milliseconds(100))
            let now = await b.sync.statistics.bytesReceived
            if now == last { break }
            last = now
        }
        try await checkDigests(a, b, "after the edit of \(id.name)")
        let after = await b.sync.statistics
        if explain {
            let tokenAfter = try await b.store.syncValue(positionKey) ?? []
            // What B adopted from the batch: the knowledge it stated.
            let stated = await b.sync.knowledge(of: zone).entries(above: base)
            let parts = batchParts(
                previous: previous, edited: try await a.record(for: id), base: base, stated: stated,
                token: (tokenBefore, tokenAfter), link: link)
            printNote(
                "text one-char \(link.rawValue): received \(after.bytesReceived - before.bytesReceived) payload bytes; the batch rebuilt: \(parts)"
            )
        }
        return EditTraffic(
            payload: after.bytesReceived - before.bytesReceived,
            compressed: await b.traffic().bytesReceived - wireBefore,
            batches: after.batchesReceived - before.batchesReceived,
            deltasApplied: after.fieldDeltasApplied - before.fieldDeltasApplied,
            wantedWhole: after.recordsWantedWhole - before.recordsWantedWhole)
    }

    /// The parts of the batch that carries `edited` to a subscriber that holds `previous` and
    /// knows `base`, as the sender builds it (Spec/replication.md §3.5, §3.5.4): a live batch
    /// naming its subscription by number, its token a change to the last (on a new connection,
    /// to the one B presented in `subscribe`, which numbered the subscription), its vectors
    /// written against the knowledge stated so far (on a new connection, B's in `subscribe`).
    /// Sizes from the public encoders, by difference.
    static func batchParts(
        previous: Record, edited: Record, base: VersionVector, stated: VersionVector,
        token: (before: [UInt8], after: [UInt8]), link: LargeFieldLink
    ) -> String {
        guard var sparse = SparseRecord(edited, base: base) else { return "the edited version has no sparse form" }
        // The knowledge and the base are written against the knowledge B stated in `subscribe`
        // joined with what A's batches stated, which in this steady state is B's knowledge before
        // the edit (Spec/replication.md §3.5.4).
        sparse.encodeEdits(against: previous, base: base)
        let kept = zip(token.before, token.after).prefix { $0 == $1 }.count
        let stated: VersionVector? = stated.count == 0 ? nil : stated
        func size(_ items: [SparseRecord], knowledge: VersionVector?, withToken: Bool) -> Int {
            LiveChangesMessage(
                subscription: 1, zone: zone, batch: link == .live ? 2 : 1, isCaughtUp: true,
                tokenKept: withToken ? kept : 0,
                tokenTail: withToken ? Array(token.after[kept...]) : [], knowledge: knowledge, records: [],
                sparseRecords: items, base: base, reference: base
            ).encoded().count
        }
        let total = size([sparse], knowledge: stated, withToken: true)
        let bare = size([], knowledge: nil, withToken: false)
        var skeleton = sparse
        skeleton.deltas = []
        let slot = size([sparse], knowledge: nil, withToken: false) - size([skeleton], knowledge: nil, withToken: false)
        let record = size([skeleton], knowledge: nil, withToken: false) - bare
        let names = edited.id.name.utf8.count + edited.recordType.utf8.count
        var patch = "-"
        if case .patch(let edits)? = sparse.deltas.first?.edit {
            patch = edits.map { "offset \($0.offset) delete \($0.deleteCount) insert \($0.insert.count)" }.joined(
                separator: ", ")
        }
        return
            "\(total) = header \(bare) (with the record count) + token \(size([], knowledge: nil, withToken: true) - bare)"
            + " + knowledge \(size([], knowledge: stated, withToken: false) - bare) (\(stated?.count ?? 0) entr\(stated?.count == 1 ? "y" : "ies"))"
            + " + sparse section \(record) (base of \(base.count) written against the stated knowledge, record name and type \(names) bytes, vector of \(sparse.entries.count), heads, digest)"
            + " + delta slot \(slot) (\(patch))"
    }

    /// Polls `done` every 20 ms; fails after 60 s, with both nodes' state.
    static func waitUntil(_ what: String, _ a: ShoalNode, _ b: ShoalNode, _ done: () async -> Bool) async throws {
        let start = ContinuousClock.now
        while !(await done()) {
            try await Task.sleep(for: .milliseconds(20))
            if ContinuousClock.now - start > .seconds(60) {
                throw BenchError(
                    "\(what): not within 60 s; B's peers: \(await b.peers()); B's errors: \(await b.sync.lastErrors()); A's errors: \(await a.sync.lastErrors())"
                )
            }
        }
    }

    static func checkDigests(_ a: ShoalNode, _ b: ShoalNode, _ when: String) async throws {
        guard try await a.digest(of: zone) == (try await b.digest(of: zone)) else {
            throw BenchError("digests differ \(when)")
        }
    }
}
