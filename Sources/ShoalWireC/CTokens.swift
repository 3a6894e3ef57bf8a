// CTokens: the C entry points for change tokens, in bytes, JSON and base64url text (shoalwire.h).

public import CShoalWire
import ShoalWire
import ShoalWireJSON

/// Decodes a change token into its JSON form, with its text (shoalwire.h).
@_cdecl("shoal_token_decode_json")
public func shoalTokenDecodeJSON(
    _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(json)
        let contents = try ChangeToken(bytes: [UInt8](try CBoundary.input(bytes, len))).contents()
        try CBoundary.hand(json: VectorJSON.token(contents), to: json)
    }
}

/// Encodes a change token given in its JSON form (shoalwire.h).
@_cdecl("shoal_token_encode_json")
public func shoalTokenEncodeJSON(
    _ json: UnsafePointer<CChar>?, _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ len: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        let token = ChangeToken(try VectorJSON.token(try CBoundary.json(json, "json")).0)
        _ = try token.contents()
        try CBoundary.hand(bytes: token.bytes, to: bytes, length: len)
    }
}

/// A valid token's bytes as base64url text (shoalwire.h).
@_cdecl("shoal_token_to_text")
public func shoalTokenToText(
    _ bytes: UnsafePointer<UInt8>?, _ len: Int, _ text: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(text)
        let token = ChangeToken(bytes: [UInt8](try CBoundary.input(bytes, len)))
        _ = try token.contents()
        try CBoundary.hand(text: Array(token.description.utf8), to: text)
    }
}

/// A token's text form parsed back into its bytes, which are checked as a token (shoalwire.h).
@_cdecl("shoal_token_from_text")
public func shoalTokenFromText(
    _ text: UnsafePointer<CChar>?, _ bytes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
    _ len: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<shoal_error>?
) -> Int32 {
    CBoundary.run(err) {
        try CBoundary.prepare(bytes, len)
        guard let token = ChangeToken(text: try CBoundary.string(text, "text")) else {
            throw CArgumentError("text is not base64url (RFC 4648 §5, no padding)")
        }
        _ = try token.contents()
        try CBoundary.hand(bytes: token.bytes, to: bytes, length: len)
    }
}
