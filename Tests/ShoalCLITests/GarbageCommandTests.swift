// GarbageCommandTests: `shoal gc` reports, and with --dry-run only reports, asset files no record references.

import Foundation
import Testing

@Suite struct GarbageCommandTests {
    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    @Test func anAssetNoRecordReferencesIsCollected() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-gc-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        #expect(try await Shoal.run(["zone", "create", "album", "--data", dir]).status == 0)
        // 300 KB of varied bytes: a few chunks.
        var rng = UInt64(0x6C)
        let bytes = (0..<300_000).map { _ -> UInt8 in
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: rng >> 33)
        }
        let file = dir + "-photo.bin"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        #expect(
            try await Shoal.run(["put", "album", "p1", "--type", "Photo", "image=@\(file)", "--data", dir]).status == 0)

        // Referenced: nothing to collect.
        let kept = try json(try await Shoal.run(["gc", "--dry-run", "--json", "--data", dir]).output)
        #expect(kept["manifestsRemoved"] as? Int == 0 && kept["chunksRemoved"] as? Int == 0, "\(kept)")
        #expect((kept["chunksKept"] as? Int ?? 0) > 0)

        // The field now holds text: the asset is referenced by no record.
        #expect(try await Shoal.run(["put", "album", "p1", "image=gone", "--data", dir]).status == 0)
        let dry = try json(try await Shoal.run(["gc", "--dry-run", "--json", "--data", dir]).output)
        #expect(dry["dryRun"] as? Bool == true && dry["manifestsRemoved"] as? Int == 1, "\(dry)")
        let chunks = try #require(dry["chunksRemoved"] as? Int)
        #expect(chunks > 0 && (dry["bytesRemoved"] as? Int ?? 0) >= bytes.count, "\(dry)")
        // A dry run removed nothing: the real run removes the same.
        let real = try json(try await Shoal.run(["gc", "--json", "--data", dir]).output)
        #expect(real["manifestsRemoved"] as? Int == 1 && real["chunksRemoved"] as? Int == chunks, "\(real)")
        let after = try json(try await Shoal.run(["gc", "--dry-run", "--json", "--data", dir]).output)
        #expect(
            after["manifestsRemoved"] as? Int == 0 && after["chunksRemoved"] as? Int == 0
                && after["chunksKept"] as? Int == 0, "\(after)")
        let text = try await Shoal.run(["gc", "--dry-run", "--data", dir])
        #expect(text.status == 0 && text.output.hasPrefix("would have removed 0 manifests"), "\(text.output)")
    }
}
