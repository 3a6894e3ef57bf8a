// TrustedDevice: a device this node replicates with — its ID, a name for people, where to dial it.

public import Foundation

/// A device this node trusts: its connections are accepted, and its addresses dialled
/// (Spec/security.md §4). Kept in the node's store; ``ShoalNode/trustDevice(_:name:address:)``
/// adds one, ``ShoalNode/removeDevice(_:)`` removes it.
public struct TrustedDevice: Sendable, Hashable, Codable {
    /// The device's ID.
    public var device: DeviceID
    /// A name for people (may be empty).
    public var name: String
    /// Where this node dials it, `host:port` (may be empty: it dials this node).
    public var addresses: [String]
    /// When it was first trusted.
    public var added: Date

    /// A trusted device.
    public init(device: DeviceID, name: String = "", addresses: [String] = [], added: Date = Date()) {
        self.device = device
        self.name = name
        self.addresses = addresses
        self.added = added
    }

    enum CodingKeys: String, CodingKey { case device, name, addresses, added }

    /// Decodes the stored form: the device ID as its text, `added` in milliseconds since 1970.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let text = try c.decode(String.self, forKey: .device)
        do {
            device = try DeviceID(text: text)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .device, in: c, debugDescription: "\(error)")
        }
        name = try c.decode(String.self, forKey: .name)
        addresses = try c.decode([String].self, forKey: .addresses)
        added = Date(timeIntervalSince1970: Double(try c.decode(Int64.self, forKey: .added)) / 1000)
    }

    /// Encodes the stored form.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(device.text, forKey: .device)
        try c.encode(name, forKey: .name)
        try c.encode(addresses, forKey: .addresses)
        try c.encode(Int64((added.timeIntervalSince1970 * 1000).rounded()), forKey: .added)
    }
}
