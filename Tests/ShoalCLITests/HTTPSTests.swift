// HTTPSTests: the daemon's HTTP API over real TLS on loopback (--http-tls-cert, --http-tls-key),
// with a certificate OpenSSL makes and curl as the client.

import Foundation
@testable import ShoalHTTP
import ShoalTestSupport
import Testing

@Suite(.serialized) struct HTTPSTests {
    /// The first of `paths` that is an executable file.
    static func tool(_ paths: [String]) -> String? { paths.first(where: FileManager.default.isExecutableFile(atPath:)) }
    static let openssl = tool(["/usr/bin/openssl", "/usr/local/bin/openssl"])
    static let curl = tool(["/usr/bin/curl", "/usr/local/bin/curl"])

    /// Runs `program arguments…` to its end (bounded: 60 s): its status and standard output.
    static func run(_ program: String, _ arguments: [String]) async throws -> (
        status: Int32, output: String, error: String
    ) {
        try await Shoal.onOwnThread {
            let p = ChildProcess()
            p.executableURL = URL(fileURLWithPath: program)
            p.arguments = arguments
            let out = Shoal.pipe(), err = Shoal.pipe()
            p.standardOutput = out
            p.standardError = err
            try p.run()
            let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
            let deadline = Date().addingTimeInterval(60)
            while p.isRunning && Date() < deadline { usleep(10_000) }
            if p.isRunning { p.terminate() }
            p.waitUntilExit()
            return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
        }
    }

    /// A self-signed P-256 certificate for 127.0.0.1 and its key, in `dir` as `NAME.pem` and `NAME.key`.
    static func certificate(_ dir: String, _ name: String) async throws -> (cert: String, key: String) {
        let cert = dir + "/\(name).pem", key = dir + "/\(name).key"
        let made = try await run(
            try #require(openssl),
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1"
            ])
        #expect(made.status == 0, "openssl: \(made.error)")
        return (cert, key)
    }

    /// With a certificate and key the API answers over TLS only: curl trusting that certificate
    /// reads it with the key, curl trusting nothing refuses the server, and plain HTTP to the
    /// port gets no answer. Bad files and a lone flag are refused at start, naming them.
    @Test func theAPIAnswersOverTLS() async throws {
        try #require(Shoal.binary != nil, "build the shoal binary (swift build) or set SHOAL_BINARY")
        guard let curl = Self.curl, Self.openssl != nil else {
            print("theAPIAnswersOverTLS: needs openssl and curl (.ci/run installs them); skipped")
            return
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-https-\(UInt32.random(in: 0 ... .max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await Shoal.run(["init", "--data", dir]).status == 0)
        let key = try await Shoal.run(["http-key", "--data", dir]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let id = try await Shoal.deviceID(dir)
        let (cert, privateKey) = try await Self.certificate(dir, "server")
        let (_, otherKey) = try await Self.certificate(dir, "other")

        try await Shoal.withDaemons { daemons in
            let d = try daemons.start([
                "--data", dir, "--listen", "127.0.0.1:0", "--no-discovery", "--http-tls-cert", cert, "--http-tls-key",
                privateKey
            ])
            let port = try #require(await d.httpPort(), "no HTTP port: \(d.log)")
            let url = "https://127.0.0.1:\(port)"
            let device = try await Self.run(
                curl, ["-sS", "--max-time", "30", "--cacert", cert, "-H", "X-API-Key: \(key)", url + "/api/v1/device"])
            #expect(device.status == 0 && device.output.contains(id), "over TLS: \(device.output) \(device.error)")
            let page = try await Self.run(curl, ["-sS", "--max-time", "30", "--cacert", cert, url + "/"])
            #expect(page.status == 0 && page.output.contains("<html"), "the console over TLS: \(page.error)")
            let noKey = try await Self.run(
                curl,
                [
                    "-sS", "--max-time", "30", "--cacert", cert, "-o", "/dev/null", "-w", "%{http_code}",
                    url + "/api/v1/device"
                ])
            #expect(noKey.output == "401", "the key is still required: \(noKey.output) \(noKey.error)")
            let untrusted = try await Self.run(curl, ["-sS", "--max-time", "30", url + "/api/v1/device"])
            #expect(
                untrusted.status != 0,
                "a client that does not trust the certificate refuses the server: \(untrusted.output)")
            let plain = try? await LoopbackHTTP.send(port, "GET", "/api/v1/device", key: key, timeout: 10)
            #expect(plain?.status != 200, "plain HTTP gets no API answer on the TLS port")
        }

        // Refused at start, naming what is wrong.
        let lone = try await Shoal.run([
            "serve", "--data", dir, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--http-tls-cert", cert
        ])
        #expect(lone.status != 0 && lone.error.contains("--http-tls-key"), "\(lone.error)")
        let missing = try await Shoal.run([
            "serve", "--data", dir, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
            "--http-tls-cert", dir + "/nothing.pem", "--http-tls-key", privateKey
        ])
        #expect(missing.status != 0 && missing.error.contains("nothing.pem"), "\(missing.error)")
        let mismatched = try await Shoal.run([
            "serve", "--data", dir, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
            "--http-tls-cert", cert, "--http-tls-key", otherKey
        ])
        #expect(mismatched.status != 0 && mismatched.error.contains("does not go with"), "\(mismatched.error)")
    }

    /// Beyond loopback, TLS takes the place of --http-allow-plaintext; without either the
    /// refusal names both fixes.
    @Test func tlsAllowsBindingBeyondLoopback() {
        var c = HTTPConfiguration(apiKey: APIKey(text: "abcdefghijklmnopqrstuvwxyz012345"))
        c.host = "0.0.0.0"
        let refusal = c.bindingRefusal ?? ""
        #expect(refusal.contains("--http-tls-cert") && refusal.contains("--http-allow-plaintext"), "\(refusal)")
        c.tls = TLSFiles(certificatePath: "cert.pem", privateKeyPath: "key.pem")
        #expect(c.bindingRefusal == nil)
        c.tls = nil
        c.allowsPlainTextBeyondLoopback = true
        #expect(c.bindingRefusal == nil)
        c.allowsPlainTextBeyondLoopback = false
        c.host = "127.0.0.1"
        #expect(c.bindingRefusal == nil, "loopback needs neither")
    }
}
