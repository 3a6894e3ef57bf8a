// AssetBytes: an asset's bytes as ShoalNode hands them out — chunk by chunk, failing with ShoalError.

public import ShoalAssets
public import ShoalStore
public import ShoalWire

/// The bytes of an asset, one verified chunk at a time (``ShoalNode/contents(of:)``): an
/// `AsyncSequence` whose iteration fails only with `ShoalError` (a chunk missing or damaged on
/// disk is `internalError`, with the asset store's error as its `underlyingError`).
public struct AssetBytes: AsyncSequence, Sendable {
    /// A chunk's bytes.
    public typealias Element = [UInt8]
    /// Iteration throws only `ShoalError`.
    public typealias Failure = ShoalError

    let contents: AssetContents
    /// The asset being read.
    public let asset: Asset

    /// The asset's manifest: its size and chunks.
    public var manifest: AssetManifest { contents.manifest }

    /// Reads the chunks in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AssetContents.AsyncIterator
        let asset: String

        /// The next chunk's verified bytes, or nil after the last.
        public mutating func next() async throws(ShoalError) -> [UInt8]? {
            do {
                return try await base.next()
            } catch {
                throw ShoalError.mapped(error, doing: "reading \(asset)")
            }
        }

        /// The next chunk's verified bytes, or nil after the last.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ShoalError) -> [UInt8]? {
            do {
                return try await base.next(isolation: actor)
            } catch {
                throw ShoalError.mapped(error, doing: "reading \(asset)")
            }
        }
    }

    /// Starts reading at the first chunk.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: contents.makeAsyncIterator(), asset: "\(asset)")
    }
}
