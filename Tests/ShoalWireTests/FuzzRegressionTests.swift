// FuzzRegressionTests: replays every fuzz seed and every minimised fuzz crash through the fuzz checks.

import Foundation
import Testing
import ShoalSamples

/// The `Fuzz/` package's inputs, checked without sanitizers by the same code the fuzz targets
/// run (``FuzzChecks``): every file under `Fuzz/Regressions/<target>/` (crashes found by fuzzing,
/// minimised) and `Fuzz/Corpus/<target>/` (the seeds) must decode or be rejected with a located
/// error, and what decodes must re-encode to the same bytes.
@Suite struct FuzzRegressionTests {
    /// `Fuzz/`, found from this file's path so the test runs from any working directory.
    static let fuzzDirectory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    /// The regular, non-hidden files of `Fuzz/<kind>/<target>/`, sorted by name.
    static func inputs(_ kind: String, _ target: FuzzChecks.Target) throws -> [URL] {
        let dir = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target.rawValue)
        return try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: [.isRegularFileKey])
            .filter {
                !$0.lastPathComponent.hasPrefix(".")
                    && (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
            }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    static func replay(_ kind: String, _ target: FuzzChecks.Target) throws -> Int {
        let files = try inputs(kind, target)
        for file in files {
            let bytes = [UInt8](try Data(contentsOf: file))
            do {
                try target.check(bytes)
            } catch {
                Issue.record("Fuzz/\(kind)/\(target.rawValue)/\(file.lastPathComponent): \(error)")
            }
        }
        return files.count
    }

    @Test(arguments: FuzzChecks.Target.allCases)
    func regressionsStayFixed(_ target: FuzzChecks.Target) throws {
        _ = try Self.replay("Regressions", target)
    }

    @Test(arguments: FuzzChecks.Target.allCases)
    func seedsPassTheirChecks(_ target: FuzzChecks.Target) throws {
        #expect(try Self.replay("Corpus", target) > 0, "Fuzz/Corpus/\(target.rawValue) has no seeds")
    }

    /// A directory for a target that does not exist would silently go unchecked.
    @Test func everyDirectoryNamesATarget() throws {
        for kind in ["Corpus", "Regressions"] {
            let names = try FileManager.default.contentsOfDirectory(
                atPath: Self.fuzzDirectory.appendingPathComponent(kind).path)
            for name in names where !name.hasPrefix(".") {
                #expect(FuzzChecks.Target(rawValue: name) != nil, "Fuzz/\(kind)/\(name) is not a fuzz target")
            }
        }
    }
}
