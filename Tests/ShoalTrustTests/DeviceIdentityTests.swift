// DeviceIdentityTests: creating, reloading and refusing device identities, and the device ID of a certificate.

import Crypto
import Foundation
import ShoalTestSupport
import SwiftASN1
import Testing
import X509
@testable import ShoalTrust
import ShoalWire
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite struct DeviceIdentityTests {
    /// A fresh empty directory.
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "shoal-trust-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return info.st_mode & 0o777
    }

    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    @Test func createThenReloadGivesTheSameIdentity() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let created = try DeviceIdentity.loadOrCreate(in: dir)
        let again = try DeviceIdentity.loadOrCreate(in: dir)
        let loaded = try DeviceIdentity.load(from: dir)
        #expect(again.deviceID == created.deviceID)
        #expect(loaded.deviceID == created.deviceID)
        #expect(loaded.certificateDER == created.certificateDER)
        #expect(loaded.privateKey.rawRepresentation == created.privateKey.rawRepresentation)
        // Another directory is another device.
        let other = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: other) }
        #expect(try DeviceIdentity.loadOrCreate(in: other).deviceID != created.deviceID)
    }

    @Test func filesHaveTheirModes() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let old = umask(0)
        defer { umask(old) }
        _ = try DeviceIdentity.loadOrCreate(in: dir)
        let files = DeviceIdentity.Files(directory: dir)
        #expect(Self.mode(files.folder) == 0o700)
        #expect(Self.mode(files.key) == 0o600)
        #expect(Self.mode(files.certificate) == 0o644)
        // Loosened modes are tightened again on the next load.
        #expect(chmod(files.folder, 0o755) == 0 && chmod(files.key, 0o644) == 0)
        _ = try DeviceIdentity.loadOrCreate(in: dir)
        #expect(Self.mode(files.folder) == 0o700)
        #expect(Self.mode(files.key) == 0o600)
        // No temporary file is left behind.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: files.folder).sorted() == [
                "device-cert.pem", "device-key.pem"
            ])
    }

    @Test func certificateFollowsTheProfile() throws {
        let now = Date()
        let identity = try DeviceIdentity.generate(now: now)
        let cert = identity.certificate
        #expect(cert.version == .v3)
        #expect(cert.subject == cert.issuer)
        #expect(cert.subject.description == "CN=\(identity.deviceID.text)")
        #expect(abs(cert.notValidBefore.timeIntervalSince(now) + 86_400) < 2)
        let years = cert.notValidAfter.timeIntervalSince(now) / (365.2425 * 86_400)
        #expect(years > 99.9 && years < 100.1)
        #expect(cert.signatureAlgorithm == .ecdsaWithSHA256)
        #expect(cert.publicKey.isValidSignature(cert.signature, for: cert))
        let constraints = try #require(try cert.extensions.basicConstraints)
        #expect(constraints == .notCertificateAuthority)
        #expect(try cert.extensions.keyUsage == KeyUsage(digitalSignature: true))
        #expect(cert.extensions.first(where: { $0.oid == .X509ExtensionID.basicConstraints })?.critical == true)
        #expect(cert.extensions.first(where: { $0.oid == .X509ExtensionID.keyUsage })?.critical == true)
        #expect(Array(cert.serialNumber.bytes).count >= 8)
    }

    /// The device ID is the SHA-256 of the certificate's SubjectPublicKeyInfo: parsed back from
    /// the PEM file by X509, that SPKI is the key's own DER, and both give the identity's ID.
    @Test func certificateIDEqualsKeyID() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let identity = try DeviceIdentity.loadOrCreate(in: dir)
        let pem = try String(contentsOfFile: DeviceIdentity.Files(directory: dir).certificate, encoding: .utf8)
        let parsed = try Certificate(pemEncoded: pem)
        var serializer = DER.Serializer()
        try serializer.serialize(parsed.publicKey)
        #expect(serializer.serializedBytes == Array(identity.privateKey.publicKey.derRepresentation))
        let expected = Array(SHA256.hash(data: identity.privateKey.publicKey.derRepresentation))
        #expect(identity.deviceID.bytes == expected)
        #expect(
            try DeviceIdentity.deviceID(ofCertificateDER: try PEMDocument(pemString: pem).derBytes) == identity.deviceID
        )
        #expect(DeviceIdentity.deviceID(of: identity.privateKey.publicKey) == identity.deviceID)
    }

    /// Another implementation agrees: OpenSSL's SPKI hash of a certificate it made, and of ours.
    @Test func openSSLAgrees() throws {
        guard
            let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl", "/opt/homebrew/bin/openssl"].first(
                where: FileManager.default.isExecutableFile(atPath:))
        else {
            print("openSSLAgrees: no openssl found; skipping the cross-check with OpenSSL")
            return
        }
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func run(_ arguments: [String]) throws -> Data {
            let p = ChildProcess()
            p.executableURL = URL(fileURLWithPath: openssl)
            p.arguments = arguments
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "openssl \(arguments.joined(separator: " "))")
            return data
        }
        /// SHA-256 of the SPKI DER as OpenSSL writes it: `openssl x509 -pubkey | openssl pkey -pubin -outform DER`.
        func openSSLID(ofCertificate path: String) throws -> String {
            let pub = dir + "/pub.pem"
            try run(["x509", "-in", path, "-pubkey", "-noout"]).write(to: URL(fileURLWithPath: pub))
            let der = try run(["pkey", "-pubin", "-in", pub, "-outform", "DER"])
            return SHA256.hash(data: der).map { String(format: "%02x", $0) }.joined()
        }
        // A certificate OpenSSL made.
        let theirs = dir + "/openssl-cert.pem"
        _ = try run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=other",
            "-days", "2", "-keyout", dir + "/openssl-key.pem", "-out", theirs
        ])
        let theirPEM = try String(contentsOfFile: theirs, encoding: .utf8)
        let theirID = try DeviceIdentity.deviceID(ofCertificateDER: try PEMDocument(pemString: theirPEM).derBytes)
        #expect(theirID.hex == (try openSSLID(ofCertificate: theirs)))
        // Ours, read by OpenSSL: the certificate's SPKI hash and the key's public half agree with our ID.
        let ours = try DeviceIdentity.loadOrCreate(in: dir)
        let files = DeviceIdentity.Files(directory: dir)
        #expect(ours.deviceID.hex == (try openSSLID(ofCertificate: files.certificate)))
        let keyPub = try run(["pkey", "-in", files.key, "-pubout", "-outform", "DER"])
        #expect(Array(SHA256.hash(data: keyPub)) == ours.deviceID.bytes)
    }

    @Test func mismatchedKeyAndCertificateAreRefused() throws {
        let a = try Self.temporaryDirectory(), b = try Self.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: a)
            try? FileManager.default.removeItem(atPath: b)
        }
        _ = try DeviceIdentity.loadOrCreate(in: a)
        _ = try DeviceIdentity.loadOrCreate(in: b)
        let fa = DeviceIdentity.Files(directory: a), fb = DeviceIdentity.Files(directory: b)
        try FileManager.default.removeItem(atPath: fa.certificate)
        try FileManager.default.copyItem(atPath: fb.certificate, toPath: fa.certificate)
        let error = #expect(throws: IdentityError.self) { try DeviceIdentity.loadOrCreate(in: a) }
        #expect(error?.code == .mismatch)
        #expect(error?.detail.contains(fa.key) == true && error?.detail.contains(fa.certificate) == true)
        #expect(error?.detail.contains("remove") == true, "the message says how to fix it")
        // The fix the message gives: without the certificate, the key's own is made again.
        let keyID = DeviceIdentity.deviceID(of: try DeviceIdentity.readKey(fa).publicKey)
        try FileManager.default.removeItem(atPath: fa.certificate)
        #expect(try DeviceIdentity.loadOrCreate(in: a).deviceID == keyID)
    }

    @Test(arguments: [
        ("", "empty"),
        ("not a key\n", "text"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "truncated DER"),
        ("-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n", "not base64"),
        (String(repeating: "A", count: 70_000), "too large")
    ])
    func garbageKeyIsRefused(_ content: String, _ what: String) throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try DeviceIdentity.loadOrCreate(in: dir)
        let files = DeviceIdentity.Files(directory: dir)
        try Self.write(content, to: files.key)
        let error = #expect(throws: IdentityError.self, "\(what)") { try DeviceIdentity.loadOrCreate(in: dir) }
        #expect(error?.code == .malformed)
        #expect(error?.detail.contains(files.key) == true)
    }

    @Test func garbageCertificateIsRefused() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try DeviceIdentity.loadOrCreate(in: dir)
        let files = DeviceIdentity.Files(directory: dir)
        let key = try String(contentsOfFile: files.key, encoding: .utf8)
        for content in ["", "garbage", key, "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"] {
            try Self.write(content, to: files.certificate)
            let error = #expect(throws: IdentityError.self) { try DeviceIdentity.loadOrCreate(in: dir) }
            #expect(error?.code == .malformed)
            #expect(error?.detail.contains(files.certificate) == true)
        }
        #expect(throws: IdentityError.self) {
            try DeviceIdentity.deviceID(ofCertificateDER: [0x30, 0x03, 0x02, 0x01, 0x00])
        }
        #expect(throws: IdentityError.self) { try DeviceIdentity.deviceID(ofCertificateDER: []) }
    }

    @Test func certificateWithoutKeyIsRefused() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try DeviceIdentity.loadOrCreate(in: dir)
        let files = DeviceIdentity.Files(directory: dir)
        try FileManager.default.removeItem(atPath: files.key)
        let error = #expect(throws: IdentityError.self) { try DeviceIdentity.loadOrCreate(in: dir) }
        #expect(error?.code == .missingKey)
        #expect(error?.detail.contains(files.key) == true)
        #expect(!FileManager.default.fileExists(atPath: files.key), "no new key replaces a lost one silently")
    }

    /// A creation interrupted after the key: the certificate is made again, the ID is the key's;
    /// temporary files a crash left are removed.
    @Test func interruptedCreationIsCompleted() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try DeviceIdentity.loadOrCreate(in: dir)
        let files = DeviceIdentity.Files(directory: dir)
        try FileManager.default.removeItem(atPath: files.certificate)
        try Self.write("half a key", to: files.key + ".tmp-1-2")
        let second = try DeviceIdentity.loadOrCreate(in: dir)
        #expect(second.deviceID == first.deviceID)
        #expect(second.certificateDER != first.certificateDER, "a new certificate (new serial)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: files.folder).sorted() == [
                "device-cert.pem", "device-key.pem"
            ])
    }

    @Test func unreadableFileIsAnIOError() throws {
        guard getuid() != 0 else { return }  // root reads everything
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try DeviceIdentity.loadOrCreate(in: dir)
        let files = DeviceIdentity.Files(directory: dir)
        #expect(chmod(files.key, 0) == 0)
        let error = #expect(throws: IdentityError.self) { try DeviceIdentity.loadOrCreate(in: dir) }
        #expect(error?.code == .io)
        #expect(error?.detail.contains(files.key) == true)
    }

    /// A peer's certificate is input: every one-byte change and every truncation of a valid
    /// certificate either gives an ID or throws, never traps; a changed SPKI byte changes the ID.
    @Test func damagedCertificateDERNeverTraps() throws {
        let identity = try DeviceIdentity.generate()
        let der = identity.certificateDER
        let spki = try #require(DeviceIdentity.subjectPublicKeyInfo(ofCertificateDER: der))
        for i in der.indices {
            var changed = der
            changed[i] ^= 0x5A
            if let id = try? DeviceIdentity.deviceID(ofCertificateDER: changed), spki.indices.contains(i) {
                #expect(id != identity.deviceID, "byte \(i) of the SPKI changed, the ID did not")
            }
            _ = try? DeviceIdentity.deviceID(ofCertificateDER: Array(der[..<i]))
        }
    }
}
