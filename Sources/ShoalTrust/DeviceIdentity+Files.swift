// DeviceIdentity+Files: identity/device-key.pem and identity/device-cert.pem in a data directory.

import Crypto
package import Foundation
import SwiftASN1
import X509
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension DeviceIdentity {
    /// Where an identity lives inside a data directory.
    package struct Files: Sendable {
        /// `<directory>/identity`, mode 0700.
        package let folder: String
        /// `<directory>/identity/device-key.pem`: the PKCS #8 private key, mode 0600.
        package let key: String
        /// `<directory>/identity/device-cert.pem`: the certificate, mode 0644.
        package let certificate: String

        /// The identity files of the data directory `directory`.
        package init(directory: String) {
            folder = directory + "/identity"
            key = folder + "/device-key.pem"
            certificate = folder + "/device-cert.pem"
        }
    }

    /// The largest identity file read: PEM keys and certificates are a few hundred bytes.
    static let maximumFileSize = 64 * 1024

    /// Loads the identity kept in the data directory `directory`, creating it when there is none.
    ///
    /// The `identity` folder is made (or set to) mode 0700. With both files present they are
    /// loaded and checked (``load(from:)``). With the key alone (a creation interrupted between
    /// the two files) the certificate is made again from it: the device ID, which is the key's,
    /// does not change. With neither, a new identity is generated and written, each file
    /// atomically (temporary file, `fsync`, `rename`), the key first.
    /// - Throws: ``IdentityError``: `io` when a file cannot be read or written, `malformed`,
    ///   `mismatch` (see ``load(from:)``), `missingKey` when the certificate is there without its key.
    package static func loadOrCreate(in directory: String, now: Date = Date()) throws(IdentityError) -> DeviceIdentity {
        let files = Files(directory: directory)
        try prepareFolder(files.folder)
        switch (exists(files.key), exists(files.certificate)) {
        case (true, true):
            return try load(from: directory)
        case (false, true):
            throw .missingKey(
                "\(files.certificate) is there but \(files.key) is not: without its private key this node cannot prove its device ID. "
                    + "Restore device-key.pem from a backup of this data directory, or remove \(files.folder) to give the node a new device ID (its peers must then trust the new one)"
            )
        case (true, false):
            let key = try readKey(files)
            let identity = try DeviceIdentity(privateKey: key, certificate: selfSignedCertificate(for: key, now: now))
            try writeAtomically(identity.certificatePEM(), to: files.certificate, mode: 0o644)
            return identity
        case (false, false):
            let identity = try generate(now: now)
            try identity.store(in: directory)
            return identity
        }
    }

    /// Loads the identity kept in `directory` and checks it: the key is a P-256 private key, the
    /// certificate an X.509 certificate for that key, self-signed. A key file readable by others
    /// is set back to 0600.
    /// - Throws: ``IdentityError``: `io` when a file cannot be read, `malformed` when one is not
    ///   the PEM it should be, `mismatch` when the key and the certificate do not belong together.
    ///   Each names the file and the fix.
    package static func load(from directory: String) throws(IdentityError) -> DeviceIdentity {
        let files = Files(directory: directory)
        let key = try readKey(files)
        let text = try readText(files.certificate)
        let certificate: Certificate
        do {
            certificate = try Certificate(pemEncoded: text)
        } catch {
            throw .malformed(
                "\(files.certificate) is not a PEM X.509 certificate (\(error)). Remove it and open the node again: "
                    + "a new certificate is made from device-key.pem, with the same device ID")
        }
        let identity: DeviceIdentity
        do {
            identity = try DeviceIdentity(privateKey: key, certificate: certificate)
        } catch {
            throw IdentityError(
                error.code,
                "\(files.key) and \(files.certificate) do not belong together: \(error.detail). "
                    + "Restore both from the same backup, or remove \(files.certificate) and open the node again to make a new certificate for the key "
                    + "(the device ID is the key's: \(deviceID(of: key.publicKey)))", file: error.file, line: error.line
            )
        }
        var info = stat()
        if stat(files.key, &info) == 0, info.st_mode & 0o077 != 0 { _ = chmod(files.key, 0o600) }
        return identity
    }

    /// Writes the key (0600) and then the certificate (0644) into `directory`'s `identity`
    /// folder, each atomically, replacing what is there.
    /// - Throws: ``IdentityError`` `io`.
    package func store(in directory: String) throws(IdentityError) {
        let files = Files(directory: directory)
        try Self.prepareFolder(files.folder)
        try Self.writeAtomically(Array(privateKey.pemRepresentation.utf8), to: files.key, mode: 0o600)
        try Self.writeAtomically(certificatePEM(), to: files.certificate, mode: 0o644)
    }

    /// The certificate as PEM text.
    package func certificatePEM() -> [UInt8] {
        Array(PEMDocument(type: "CERTIFICATE", derBytes: certificateDER).pemString.utf8) + [0x0A]
    }

    // MARK: Files

    static func readKey(_ files: Files) throws(IdentityError) -> P256.Signing.PrivateKey {
        let text = try readText(files.key)
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: text)
        } catch {
            throw .malformed(
                "\(files.key) is not a PEM P-256 private key (\(error)). Restore \(files.folder) from a backup of this data directory, "
                    + "or remove it to give the node a new device ID (its peers must then trust the new one)")
        }
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Makes `folder` with mode 0700, or sets it to 0700; removes temporary files a crash left.
    static func prepareFolder(_ folder: String) throws(IdentityError) {
        if mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw .io("cannot create \(folder): \(errnoText())")
        }
        guard chmod(folder, 0o700) == 0 else { throw .io("cannot set \(folder) to mode 0700: \(errnoText())") }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        where name.contains(".pem.tmp-") {
            _ = unlink(folder + "/" + name)
        }
    }

    /// The text of a small file; `io` when it cannot be read, `malformed` when it is too large.
    static func readText(_ path: String) throws(IdentityError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("cannot read \(path): \(errnoText())") }
        defer { close(fd) }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io("cannot read \(path): \(errnoText())")
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > maximumFileSize {
                throw .malformed("\(path) is over \(maximumFileSize / 1024) KiB: not an identity file")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes `bytes` to a new temporary file next to `path` with `mode`, syncs it, renames it
    /// over `path` and syncs the folder: a crash leaves the old file or the new one, never half.
    static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t) throws(IdentityError) {
        let temp = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .io("cannot create \(temp): \(errnoText())") }
        var failure: IdentityError? = nil
        if fchmod(fd, mode) != 0 {
            failure = .io("cannot set \(temp) to mode \(String(mode, radix: 8)): \(errnoText())")
        }
        var written = 0
        while failure == nil && written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + written }, bytes.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                failure = .io("cannot write \(temp): \(errnoText())")
            } else {
                written += n
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = .io("cannot sync \(temp): \(errnoText())") }
        close(fd)
        if failure == nil && rename(temp, path) != 0 {
            failure = .io("cannot rename \(temp) to \(path): \(errnoText())")
        }
        if let failure {
            _ = unlink(temp)
            throw failure
        }
        let folder = (path as NSString).deletingLastPathComponent
        let dfd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
