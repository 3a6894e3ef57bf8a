// DiffErrorTests: one example per DiffError code — deltas that do not fit are rejected, never trapped on.

import Testing
import ShoalDiff
import ShoalSamples
@testable import ShoalWire

@Suite struct DiffErrorTests {
    static let zone = RecordZone.ID(name: "z")
    static let base: Record = {
        var r = Record(recordType: "Note", id: Record.ID(name: "n", zone: zone))
        r["tags"] = .list(.string(["a", "b", "c"]))
        r["text"] = .string("héllo")
        r["blob"] = .bytes([1, 2, 3])
        r["count"] = .int64(3)
        return Stamping.saved(r, by: NodeID(high: 1, low: 1), at: HLC(rawValue: 1 << 20))
    }()

    func delta(_ ops: [RecordDelta.Operation], baseTag: UInt32? = nil) -> RecordDelta {
        RecordDelta(baseTag: baseTag ?? Self.base.versionFingerprint, operations: ops)
    }

    func expectError(
        _ code: DiffError.Code, field: String? = nil, offset: Int? = nil,
        _ d: RecordDelta, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            _ = try apply(d, to: Self.base)
            Issue.record("expected \(code), but the delta applied", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, sourceLocation: sourceLocation)
            #expect(error.field == field, sourceLocation: sourceLocation)
            if let offset { #expect(error.offset == offset, sourceLocation: sourceLocation) }
            #expect(!error.detail.isEmpty && error.description.hasPrefix(code.name), sourceLocation: sourceLocation)
        }
    }

    @Test func baseMismatch() {
        expectError(.baseMismatch, delta([], baseTag: Self.base.versionFingerprint &+ 1))
    }

    @Test func outOfRangeSplicesAndPatches() {
        let past = RecordDelta.ListSplice(offset: 2, deleteCount: 2, insert: .string([]))
        expectError(.outOfRange, field: "tags", offset: 2, delta([.splice(name: "tags", stamp: nil, edits: [past])]))
        let beyond = RecordDelta.ListSplice(offset: 4, deleteCount: 0, insert: .string(["x"]))
        expectError(.outOfRange, field: "tags", offset: 4, delta([.splice(name: "tags", stamp: nil, edits: [beyond])]))
        let negative = RecordDelta.BytePatch(offset: -1, deleteCount: 1, insert: [])
        expectError(
            .outOfRange, field: "blob", offset: -1, delta([.patch(name: "blob", stamp: nil, edits: [negative])]))
        let huge = RecordDelta.BytePatch(offset: 1, deleteCount: .max, insert: [])
        expectError(.outOfRange, field: "blob", offset: 1, delta([.patch(name: "blob", stamp: nil, edits: [huge])]))
        let touching = [
            RecordDelta.BytePatch(offset: 0, deleteCount: 1, insert: [9]),
            RecordDelta.BytePatch(offset: 1, deleteCount: 1, insert: [9])
        ]
        expectError(.outOfRange, field: "blob", offset: 1, delta([.patch(name: "blob", stamp: nil, edits: touching)]))
        expectError(.outOfRange, field: "blob", delta([.patch(name: "blob", stamp: nil, edits: [])]))
        let empty = RecordDelta.BytePatch(offset: 1, deleteCount: 0, insert: [])
        expectError(.outOfRange, field: "blob", offset: 1, delta([.patch(name: "blob", stamp: nil, edits: [empty])]))
    }

    @Test func kindMismatch() {
        let ints = RecordDelta.ListSplice(offset: 0, deleteCount: 0, insert: .int64([1]))
        expectError(.kindMismatch, field: "tags", offset: 0, delta([.splice(name: "tags", stamp: nil, edits: [ints])]))
    }

    @Test func notPatchable() {
        let p = RecordDelta.BytePatch(offset: 0, deleteCount: 1, insert: [1])
        expectError(.notPatchable, field: "count", delta([.patch(name: "count", stamp: nil, edits: [p])]))
        expectError(.notPatchable, field: "tags", delta([.patch(name: "tags", stamp: nil, edits: [p])]))
        let s = RecordDelta.ListSplice(offset: 0, deleteCount: 1, insert: .string([]))
        expectError(.notPatchable, field: "text", delta([.splice(name: "text", stamp: nil, edits: [s])]))
    }

    @Test func missingField() {
        let p = RecordDelta.BytePatch(offset: 0, deleteCount: 1, insert: [1])
        expectError(.missingField, field: "absent", delta([.patch(name: "absent", stamp: nil, edits: [p])]))
        expectError(.missingField, field: "absent", delta([.drop(name: "absent")]))
    }

    @Test func invalidUTF8() {
        // "héllo": h, then é as C3 A9; cutting after C3 leaves a broken sequence.
        let p = RecordDelta.BytePatch(offset: 2, deleteCount: 1, insert: [0x41])
        expectError(.invalidUTF8, field: "text", offset: 1, delta([.patch(name: "text", stamp: nil, edits: [p])]))
    }

    @Test func unsortedOperations() {
        let ops: [RecordDelta.Operation] = [
            .set(Record.Field(name: "b", value: .int64(1))), .set(Record.Field(name: "a", value: .int64(1)))
        ]
        expectError(.unsortedOperations, field: "a", delta(ops))
        let dup: [RecordDelta.Operation] = [.drop(name: "count"), .drop(name: "count")]
        expectError(.unsortedOperations, field: "count", delta(dup))
    }

    @Test func recordMismatch() {
        var other = Record(recordType: "Note", id: Record.ID(name: "other", zone: Self.zone))
        other["x"] = .int64(1)
        #expect(throws: DiffError.self) { try merge(Self.base, other) }
        do {
            _ = try merge(ancestor: Self.base, local: Self.base, remote: other)
            Issue.record("expected recordMismatch")
        } catch {
            #expect(error.code == .recordMismatch)
        }
    }

    @Test func inPlaceApplyIsAllOrNothing() {
        var r = Self.base
        let bad = RecordDelta.BytePatch(offset: 99, deleteCount: 1, insert: [])
        let d = delta([
            .set(Record.Field(name: "a", value: .int64(1))), .drop(name: "count"),
            .patch(name: "text", stamp: nil, edits: [bad])
        ])
        #expect(throws: DiffError.self) { try r.apply(d) }
        #expect(r == Self.base)
    }

    @Test func randomDeltasNeverTrap() {
        // Deltas computed against one record and applied to random others: errors, never traps.
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0xD1FF_0004)
        var editor = RecordEditor(seed: seed)
        var rejected = 0
        for _ in 0..<2_000 {
            let a = editor.gen.record()
            let b = editor.edited(a, stamp: nil)
            var d = diff(a, b, options: DiffOptions(bytePatchThreshold: 8))
            let other = editor.edited(a, stamp: nil)
            do { _ = try apply(d, to: other) } catch { rejected += 1 }
            d.baseTag = 0
            do { _ = try apply(d, to: a) } catch { rejected += 1 }
        }
        #expect(rejected > 0)
    }
}
