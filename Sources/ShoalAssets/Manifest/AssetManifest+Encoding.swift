// AssetManifest+Encoding: the manifest's binary form — magic, version, asset, chunks, CRC-32C (Spec/assets.md §4).

import ShoalWire

extension AssetManifest {
    /// The four bytes every encoded manifest starts with: "SHAM".
    static let magic: [UInt8] = [0x53, 0x48, 0x41, 0x4D]
    /// The format version this code writes and reads.
    static let version: UInt8 = 1

    /// The canonical binary form: `"SHAM"`, version 1, asset hash (32 bytes), size (varint), chunk
    /// count (varint), each chunk's hash (32 bytes) and length (varint), then the CRC-32C of all of
    /// that (4 bytes, little-endian).
    public func encoded() -> [UInt8] {
        var size = 4 + 1 + 32 + WireSize.varint(UInt64(asset.size)) + WireSize.varint(UInt64(chunks.count)) + 4
        for c in chunks { size += 32 + WireSize.varint(UInt64(c.length)) }
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            var w = WireWriter(start: UnsafeMutableRawPointer(base), count: size)
            Self.magic.withUnsafeBytes { w.writeRaw($0) }
            w.writeByte(Self.version)
            w.writeContentHash(asset.hash)
            w.writeVarint(UInt64(asset.size))
            w.writeVarint(UInt64(chunks.count))
            for c in chunks {
                w.writeContentHash(c.hash)
                w.writeVarint(UInt64(c.length))
            }
            w.writeFixed32(w.checksumOfWritten())
            initialized = size
        }
    }

    /// Decodes ``encoded()`` bytes.
    ///
    /// Checks the form only (magic, version, canonical varints, no trailing bytes, checksum), not
    /// the chunking rules; ``AssetStore`` validates those before storing a manifest.
    /// - Throws: ``AssetError`` `invalidArguments` naming the offset and what was wrong.
    public init(decoding bytes: [UInt8]) throws(AssetError) {
        do throws(WireError) {
            self = try withBytes(of: bytes) { (raw) throws(WireError) -> AssetManifest in
                var r = WireReader(raw, limits: .default)
                let magic = try r.readRaw(4, "manifest magic")
                guard magic.elementsEqual(Self.magic) else {
                    throw r.error(.invalidValue, "not a Shoal asset manifest (magic is not \"SHAM\")")
                }
                let version = try r.readByte("manifest version")
                guard version == Self.version else {
                    throw r.error(
                        .invalidValue,
                        "manifest version \(version) is not supported (this build reads version \(Self.version))")
                }
                let hash = try r.readContentHash("asset hash")
                let size = try r.readVarint("asset size")
                guard size <= UInt64(Int64.max) else {
                    throw r.error(.invalidValue, "asset size \(size) is above 2^63 − 1")
                }
                let count = try r.readVarint("chunk count")
                guard count <= UInt64(r.available / 33) else {
                    throw r.error(.truncated, "\(count) chunks cannot fit in the \(r.available) bytes left")
                }
                var chunks: [Chunk] = []
                chunks.reserveCapacity(Int(count))
                for i in 0..<Int(count) {
                    let h = try r.readContentHash("hash of chunk \(i)")
                    let length = try r.readVarint("length of chunk \(i)")
                    guard length <= UInt64(Int32.max) else {
                        throw r.error(.invalidValue, "chunk \(i) length \(length) is implausible")
                    }
                    chunks.append(Chunk(hash: h, length: Int(length)))
                }
                let end = r.position
                let stored = try r.readFixed32("manifest checksum")
                try r.expectEnd("manifest")
                let computed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<end]))
                guard stored == computed else {
                    throw r.error(.invalidValue, "manifest checksum does not match its bytes (damaged)")
                }
                return AssetManifest(asset: Asset(hash: hash, size: Int64(size)), chunks: chunks)
            }
        } catch {
            throw .invalidManifest(nil, "\(error)")
        }
    }
}
