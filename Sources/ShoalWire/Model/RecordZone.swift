// RecordZone and RecordZone.ID: the unit of replication, atomic batches and permissions.

/// A zone: a named group of records that replicates, commits and is shared as one unit.
public struct RecordZone: Hashable, Sendable {
    /// A zone's identity: its name and its owner's name.
    ///
    /// Nodes that replicate a zone agree on its ID; two zones with the same name but different
    /// owners are different zones.
    public struct ID: Hashable, Comparable, Sendable, CustomStringConvertible {
        /// The owner name used when none is given (CloudKit's `CKCurrentUserDefaultName`).
        public static let defaultOwnerName = "_defaultOwner"

        /// The zone's name, 1–255 UTF-8 bytes.
        public var name: String
        /// The owner's name, 1–255 UTF-8 bytes.
        public var owner: String

        /// Creates a zone ID.
        public init(name: String, owner: String = ID.defaultOwnerName) {
            self.name = name
            self.owner = owner
        }

        /// Equal when name and owner have the same UTF-8 bytes (no Unicode normalisation).
        public static func == (a: ID, b: ID) -> Bool {
            UTF8Order.equal(a.name, b.name) && UTF8Order.equal(a.owner, b.owner)
        }

        /// Hashes the UTF-8 bytes of name and owner, consistently with `==`.
        public func hash(into h: inout Hasher) {
            UTF8Order.hash(name, into: &h)
            UTF8Order.hash(owner, into: &h)
        }

        public static func < (a: ID, b: ID) -> Bool {
            let c = UTF8Order.compare(a.name, b.name)
            return c != 0 ? c < 0 : UTF8Order.compare(a.owner, b.owner) < 0
        }

        /// `name` alone for the default owner, else `name@owner`.
        public var description: String { owner == ID.defaultOwnerName ? name : "\(name)@\(owner)" }
    }

    /// The zone's identity.
    public var id: ID

    /// Creates a zone.
    public init(id: ID) { self.id = id }

    /// Creates a zone with the default owner.
    public init(name: String) { self.id = ID(name: name) }
}
