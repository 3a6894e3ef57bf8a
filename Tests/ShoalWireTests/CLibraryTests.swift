// CLibraryTests: the C library (libShoalWireC, shoalwire.h) from outside Swift — a C program
// compiled with the system's cc under AddressSanitizer, and the Python package — run over every
// vector of Spec/vectors the C interface covers.

import Foundation
import ShoalTestSupport
import Testing
import ShoalWireJSON

/// Where the pieces are, and the manifest the C program reads.
enum CLibrary {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let header = root.appendingPathComponent("Sources/CShoalWire/include")
    static let program = root.appendingPathComponent("bindings/c/check-vectors.c")
    static let python = root.appendingPathComponent("bindings/python")

    /// libShoalWireC.so beside the test bundle (`swift build` builds it with every product), or
    /// `SHOALWIRE_LIBRARY`.
    static var library: URL? {
        if let env = ProcessInfo.processInfo.environment["SHOALWIRE_LIBRARY"] { return URL(fileURLWithPath: env) }
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("libShoalWireC.so")
            if FileManager.default.fileExists(atPath: path.path) { return path }
        }
        return nil
    }

    /// The first of `names` found on PATH.
    static func tool(_ names: String...) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for name in names {
            for dir in path.split(separator: ":") {
                let candidate = "\(dir)/\(name)"
                if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            }
        }
        return nil
    }

    /// Runs a program to its end; its status and its output and error streams together.
    static func run(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (
        status: Int32, output: String
    ) {
        let p = ChildProcess()
        let out = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoalwire-c-\(UInt32.random(in: 0 ... .max)).log")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: out) }
        let handle = try FileHandle(forWritingTo: out)
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + [program] + arguments
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        p.waitUntilExit()
        try handle.close()
        return (p.terminationStatus, (try? String(contentsOf: out, encoding: .utf8)) ?? "")
    }

    /// The manifest lines of check-vectors.c for every vector the C interface covers, and the
    /// kinds it does not (none, since control payloads, device IDs and discovery announcements
    /// joined it).
    static func manifest() throws -> (lines: [String], uncovered: [String: Int]) {
        var lines = [String]()
        var uncovered = [String: Int]()
        let codecFiles = [
            "values.json", "records.json", "deltas.json", "tombstones.json", "tokens.json", "invalid.json",
            "messages.json",
            "discovery.json"
        ]
        for file in codecFiles + ["frames.json", "device-ids.json"] {
            let data = try Data(contentsOf: root.appendingPathComponent("Spec/vectors/\(file)"))
            for entry in try VectorJSON.array(try JSONSerialization.jsonObject(with: data), file) {
                let o = try VectorJSON.object(entry, file)
                let kind = try VectorJSON.string(o["kind"], "kind"), name = try VectorJSON.string(o["name"], "name")
                let framing = file == "frames.json" && (kind == "frame" || kind == "stream")
                let control = file == "frames.json" && VectorJSON.controlKinds.contains(kind)
                let error = (o["error"] as? String) ?? "ok"
                let offset = (o["offset"] as? Int).map(String.init) ?? "0"
                if file == "device-ids.json" && kind == "device_id" {
                    let text = Array(try VectorJSON.string(o["text"], "\(name).text").utf8)
                    lines.append(
                        ["device", name, (o["hex"] as? String) ?? "-", VectorJSON.hex(text), error, offset].joined(
                            separator: "\t"))
                    continue
                }
                guard framing || control || codecFiles.contains(file) else {
                    uncovered[kind, default: 0] += 1
                    continue
                }
                let hex = try VectorJSON.string(o["hex"], "\(name).hex")
                let json = VectorJSON.optional(o["json"]) as? [String: Any]
                if framing {
                    let payloads = (kind == "frame" ? json?["payload"] : json?["payloads"]) as? String
                    lines.append(
                        [
                            "frame", name, hex, error, offset, kind == "stream" ? "1" : "0",
                            payloads.map { $0.isEmpty ? "-" : $0 } ?? "-"
                        ].joined(separator: "\t"))
                } else {
                    var zone = "-"
                    if let z = VectorJSON.optional(o["zone"]) {
                        zone = String(
                            decoding: try JSONSerialization.data(withJSONObject: z, options: [.sortedKeys]),
                            as: UTF8.self)
                    }
                    let text = (json?["text"] as? String) ?? "-"
                    lines.append(["codec", kind, name, hex, error, offset, zone, text].joined(separator: "\t"))
                }
            }
        }
        return (lines, uncovered)
    }
}

@Suite(.serialized) struct CLibraryTests {
    /// check-vectors.c, compiled with cc and AddressSanitizer against shoalwire.h and the
    /// library: every covered vector decodes, re-encodes to its bytes or fails with its code and
    /// offset, and nothing leaks.
    @Test func cProgramRunsEveryVectorUnderAddressSanitizer() throws {
        guard let cc = CLibrary.tool("cc", "gcc", "clang") else {
            print("CLibraryTests: skipped, no C compiler (cc, gcc, clang) on PATH")
            return
        }
        let library = try #require(
            CLibrary.library,
            "libShoalWireC.so not found beside the tests: run swift build (it builds every product) or set SHOALWIRE_LIBRARY"
        )
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoalwire-c-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        let (lines, uncovered) = try CLibrary.manifest()
        let manifest = work.appendingPathComponent("vectors.tsv")
        try (lines.joined(separator: "\n") + "\n").write(to: manifest, atomically: true, encoding: .utf8)
        print(
            "CLibraryTests: \(lines.count) vectors through the C interface; not in it: \(uncovered.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
        )
        #expect(uncovered.isEmpty, "vector kinds the C interface does not cover: \(uncovered)")
        for kind in ["device", "codec\terror_message", "codec\tping", "codec\tgoodbye", "codec\tdiscovery"] {
            #expect(lines.contains { $0.hasPrefix(kind + "\t") }, "no \(kind) vectors in the manifest")
        }

        let binary = work.appendingPathComponent("check-vectors").path
        let libDir = library.deletingLastPathComponent().path
        let build = try CLibrary.run(
            cc,
            [
                "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-g", "-fsanitize=address", "-fno-omit-frame-pointer",
                "-I", CLibrary.header.path, CLibrary.program.path, "-L", libDir, "-Wl,-rpath,\(libDir)",
                "-lShoalWireC", "-o", binary
            ])
        try #require(build.status == 0, "cc failed:\n\(build.output)")
        let run = try CLibrary.run(
            binary, [manifest.path], environment: ["ASAN_OPTIONS": "detect_leaks=1", "SWIFT_BACKTRACE": "enable=no"])
        #expect(run.status == 0, "check-vectors failed:\n\(run.output)")
        #expect(run.output.contains("checked \(lines.count) vectors, 0 failed"), "\(run.output)")
        #expect(!run.output.contains("LeakSanitizer"), "\(run.output)")
    }

    /// README's C example (bindings/c/example.c) compiles and prints what it says.
    @Test func readmeExampleRuns() throws {
        guard let cc = CLibrary.tool("cc", "gcc", "clang") else {
            print("CLibraryTests: skipped, no C compiler (cc, gcc, clang) on PATH")
            return
        }
        let library = try #require(
            CLibrary.library, "libShoalWireC.so not found beside the tests: run swift build or set SHOALWIRE_LIBRARY")
        let binary = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoalwire-example-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: binary) }
        let libDir = library.deletingLastPathComponent().path
        let build = try CLibrary.run(
            cc,
            [
                "-std=gnu11", "-Wall", "-Werror", "-fsanitize=address", "-I", CLibrary.header.path,
                CLibrary.root.appendingPathComponent("bindings/c/example.c").path,
                "-L", libDir, "-Wl,-rpath,\(libDir)", "-lShoalWireC", "-o", binary
            ])
        try #require(build.status == 0, "cc failed:\n\(build.output)")
        let run = try CLibrary.run(binary, [], environment: ["ASAN_OPTIONS": "detect_leaks=1"])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("\"value\":\"Milk and eggs\""), "\(run.output)")
        #expect(run.output.contains("error 1 truncated at byte"), "\(run.output)")
        #expect(run.output.contains("frame type 0x7f, "), "\(run.output)")
    }

    /// `python -m pytest bindings/python`: the Python package over the same library and vectors.
    @Test func pythonPackagePassesItsTests() throws {
        guard let python = CLibrary.tool("python3", "python") else {
            print("CLibraryTests: skipped the Python package, no python3 on PATH")
            return
        }
        let probe = try CLibrary.run(python, ["-c", "import pytest"])
        guard probe.status == 0 else {
            print("CLibraryTests: skipped the Python package, pytest is not installed (apt-get install python3-pytest)")
            return
        }
        let library = try #require(
            CLibrary.library, "libShoalWireC.so not found beside the tests: run swift build or set SHOALWIRE_LIBRARY")
        let run = try CLibrary.run(
            python, ["-m", "pytest", "-q", "-p", "no:cacheprovider", CLibrary.python.path],
            environment: [
                "SHOALWIRE_LIBRARY": library.path, "PYTHONPATH": CLibrary.python.appendingPathComponent("src").path,
                "PYTHONDONTWRITEBYTECODE": "1"
            ])
        #expect(run.status == 0, "pytest failed:\n\(run.output)")
        print("CLibraryTests: pytest: \(run.output.split(separator: "\n").last ?? "")")
    }
}
