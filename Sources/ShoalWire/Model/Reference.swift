// Reference: a field value or parent link pointing at another record, with its delete action.

/// A link from one record to another, as a field value or as a record's parent.
public struct Reference: Hashable, Sendable, CustomStringConvertible {
    /// What happens to the record holding the reference when its target is deleted.
    public enum Action: UInt8, Hashable, Sendable {
        /// Nothing: the reference dangles.
        case none = 0
        /// The holder is deleted too, deterministically on every node.
        case deleteSelf = 1
    }

    /// The record pointed at.
    public var recordID: Record.ID
    /// What to do when the target is deleted.
    public var action: Action

    /// Creates a reference.
    public init(recordID: Record.ID, action: Action = .none) {
        self.recordID = recordID
        self.action = action
    }

    public var description: String {
        action == .deleteSelf ? "→\(recordID) (deleteSelf)" : "→\(recordID)"
    }
}
