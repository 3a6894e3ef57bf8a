// ModifyTests: saves and deletes with CloudKit semantics — policies, atomic batches, per-item
// errors, cascades, limits, and the notes-app conflict scenario.

import Testing
import ShoalStore
import ShoalWire

@Suite struct ModifyTests {
    @Test func saveStampsFieldsWithOneDot() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        var r = note("n1", "Hello")
        r["body"] = .string("text")
        let s1 = try await store.save(r)
        let node = store.nodeID
        let dot1 = Dot(node: node, hlc: s1.versionVector[node])
        #expect(s1.fields.allSatisfy { $0.stamp == dot1 })
        #expect(s1.creation == dot1)
        #expect(s1.heads == [Record.Head(node: node, isDeletion: false)])
        #expect(s1.changedKeys.isEmpty)
        #expect(s1.changeTag != nil)

        var edit = s1
        edit["title"] = .string("Changed")
        let s2 = try await store.save(edit)
        let dot2 = Dot(node: node, hlc: s2.versionVector[node])
        #expect(dot2.hlc > dot1.hlc)
        #expect(s2.fields.first { $0.name == "title" }?.stamp == dot2)
        #expect(s2.fields.first { $0.name == "body" }?.stamp == dot1)
        #expect(s2.changeTag != s1.changeTag)
        #expect(try await store.record(for: r.id) == s2)

        // Removing a field leaves a stamped marker.
        var rm = s2
        rm["body"] = nil
        let s3 = try await store.save(rm)
        #expect(s3["body"] == nil)
        #expect(s3.fields.contains { $0.name == "body" && $0.value == nil && $0.stamp != nil })
    }

    @Test func notesAppConflictResolveAndResave() async throws {
        // Two writers fetch the same note; one is offline while the other saves; the offline
        // writer's save with ifServerRecordUnchanged fails with the three records, it merges and resaves.
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        var base = note("groceries", "Groceries")
        base["text"] = .string("milk")
        let v1 = try await store.save(base)

        var phone = try await store.record(for: v1.id)
        var laptop = try await store.record(for: v1.id)
        phone["text"] = .string("milk, eggs")
        let v2 = try await store.save(phone)
        laptop["title"] = .string("Shopping")
        let err = await expectCode(.serverRecordChanged) { _ = try await store.save(laptop) }
        let e = try #require(err)
        #expect(e.ancestorRecord == v1)
        #expect(e.clientRecord == laptop)
        #expect(e.serverRecord == v2)
        #expect(e.message.contains("groceries"))

        // Resolve: apply the client's changed keys to the server record and save again.
        var resolved = try #require(e.serverRecord)
        for key in laptop.changedKeys { resolved[key] = laptop[key] }
        let v3 = try await store.save(resolved)
        #expect(v3["title"] == .string("Shopping"))
        #expect(v3["text"] == .string("milk, eggs"))

        // A new record whose ID exists conflicts too (no ancestor).
        let dup = await expectCode(.serverRecordChanged) { _ = try await store.save(note("groceries", "other")) }
        #expect(dup?.ancestorRecord == nil)
    }

    @Test func changedKeysAndAllKeysPolicies() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        var r = note("n", "T")
        r["a"] = .int64(1)
        r["b"] = .int64(2)
        let s1 = try await store.save(r)
        var stale = s1
        var other = s1
        other["a"] = .int64(10)
        _ = try await store.save(other)
        stale["b"] = .int64(20)
        let s3 = try await store.save(stale, policy: .changedKeys)
        #expect(s3["a"] == .int64(10))
        #expect(s3["b"] == .int64(20))

        var full = Record(recordType: "Note", id: r.id)
        full["title"] = .string("Only")
        let s4 = try await store.save(full, policy: .allKeys)
        #expect(s4.allKeys == ["title"])
        #expect(s4.fields.count == 3)  // a and b are stamped removal markers
    }

    @Test func deleteKeepsTombstoneAndRecreateWorks() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        let s = try await store.save(note("n", "T"))
        try await store.delete(s.id)
        await expectCode(.unknownItem) { _ = try await store.record(for: s.id) }
        await expectCode(.unknownItem) { try await store.delete(s.id) }
        // Saving the stale copy: the record is gone.
        var stale = s
        stale["title"] = .string("late")
        await expectCode(.unknownItem) { _ = try await store.save(stale) }
        // A new record with the same ID re-creates it, superseding the tombstone.
        let again = try await store.save(note("n", "New"))
        #expect(again.allKeys == ["title"])
        #expect(again.versionVector.compare(s.versionVector) == .after)
    }

    @Test func atomicZoneBatchesAndPartialFailure() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        let other = RecordZone.ID(name: "other")
        try await store.createZone(notes)
        try await store.createZone(other)
        _ = try await store.save(note("exists", "x"))
        let batch = [note("a", "A"), note("exists", "conflict"), note("c", "C", zone: other)]
        let e = try #require(await expectCode(.partialFailure) { try await store.modify(saving: batch) })
        #expect(e.partialErrors[batch[1].id]?.code == .serverRecordChanged)
        #expect(e.partialErrors[batch[0].id]?.code == .batchRequestFailed)
        #expect(e.partialErrors[batch[2].id] == nil)
        #expect(e.savedRecords.map(\.id) == [batch[2].id])
        await expectCode(.unknownItem) { _ = try await store.record(for: batch[0].id) }

        // Non-atomic: the good item commits alone.
        let e2 = try #require(
            await expectCode(.partialFailure) {
                try await store.modify(saving: [note("a", "A"), note("exists", "again")], atomically: false)
            })
        #expect(e2.partialErrors.count == 1)
        #expect(try await store.record(for: batch[0].id)["title"] == .string("A"))
        // Missing zone per item.
        let e3 = try #require(
            await expectCode(.partialFailure) {
                try await store.modify(saving: [note("z", "Z", zone: RecordZone.ID(name: "nope"))])
            })
        #expect(e3.partialErrors.values.first?.code == .zoneNotFound)
        // The same ID twice is a malformed request.
        await expectCode(.invalidArguments) {
            try await store.modify(saving: [note("q", "1")], deleting: [note("q", "1").id])
        }
    }

    @Test func limitsAndChunking() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir) {
            $0.maxAtomicBatchItems = 10; $0.chunkSize = 7
        }
        try await store.createZone(notes)
        var big = note("big", "x")
        big["blob"] = .bytes([UInt8](repeating: 1, count: 1 << 20))
        let e = try #require(await expectCode(.partialFailure) { try await store.modify(saving: [big]) })
        #expect(e.partialErrors[big.id]?.code == .limitExceeded)
        #expect(e.partialErrors[big.id]?.message.contains("maxRecordBytes") == true)
        let many = (0..<25).map { note("m\($0)", "\($0)") }
        let le = await expectCode(.limitExceeded) { try await store.modify(saving: many) }
        #expect(le?.message.contains("atomically: false") == true)
        let r = try await store.modify(saving: many, atomically: false)
        #expect(r.savedRecords.count == 25)
        #expect(try await store.allRecordIDs(in: notes).count == 25)
        var bad = Record(recordType: "9bad", id: Record.ID(name: "b", zone: notes))
        bad["x"] = .int64(1)
        let ie = try #require(await expectCode(.partialFailure) { try await store.modify(saving: [bad]) })
        #expect(ie.partialErrors[bad.id]?.code == .invalidArguments)
    }

    @Test func deleteSelfCascadesDeterministically() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        let folder = try await store.save(note("folder", "F"))
        var child = note("child", "C")
        child["folder"] = .reference(Reference(recordID: folder.id, action: .deleteSelf))
        var grandchild = note("grandchild", "G")
        grandchild["up"] = .list(.reference([Reference(recordID: child.id, action: .deleteSelf)]))
        var loose = note("loose", "L")
        loose["folder"] = .reference(Reference(recordID: folder.id))
        loose.parent = Reference(recordID: folder.id)
        try await store.modify(saving: [child, grandchild, loose])
        let r = try await store.modify(deleting: [folder.id])
        #expect(r.deletedRecordIDs == [folder.id, child.id, grandchild.id])
        #expect(try await store.allRecordIDs(in: notes) == [loose.id])
        #expect(try await store.record(for: loose.id).parent?.recordID == folder.id)
    }

    @Test func fetchWithDesiredKeysAndPermission() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        var r = note("n", "T")
        r["body"] = .string("long")
        _ = try await store.save(r)
        let partial = try await store.record(for: r.id, desiredKeys: ["title"])
        #expect(partial.allKeys == ["title"])
        var edit = partial
        edit["title"] = .string("T2")
        let s = try await store.save(edit)
        #expect(s["body"] == .string("long"))
        let results = await store.records(for: [r.id, Record.ID(name: "missing", zone: notes)])
        #expect(results.count == 2)

        let ro = RecordZone.ID(name: "theirs", owner: "bob")
        try await store.createZone(ro, scope: .shared, readOnly: true)
        let pe = try #require(
            await expectCode(.partialFailure) { try await store.modify(saving: [note("x", "x", zone: ro)]) })
        #expect(pe.partialErrors.values.first?.code == .permissionFailure)
        await expectCode(.permissionFailure) { try await store.deleteZone(ro) }
    }
}
