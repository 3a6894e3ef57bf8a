// EditRange: the rules every splice or patch list obeys — inside the value, increasing, non-empty.

/// The rules every splice or patch list obeys: edits non-empty, inside the base value, in
/// increasing order with a gap between them (the same rules the canonical codec enforces).
package enum EditRange {
    /// Checks `edits` (offset, deleteCount, insertCount) against a base of `baseCount` units.
    /// - Throws: ``DiffError`` `.outOfRange` naming the first edit that breaks a rule.
    package static func check(
        _ edits: some Sequence<(Int, Int, Int)>, count: Int, baseCount: Int,
        field: String, unit: String
    ) throws(DiffError) {
        if count == 0 {
            throw DiffError(.outOfRange, field: field, "an edit operation has no edits; omit the operation instead")
        }
        var end = -1
        for (offset, deleteCount, insertCount) in edits {
            guard offset >= 0, deleteCount >= 0, offset <= baseCount, deleteCount <= baseCount &- offset else {
                throw DiffError.outOfRange(
                    field, offset: offset,
                    "an edit removes \(deleteCount) \(unit)s at \(offset) but the value has \(baseCount)")
            }
            guard deleteCount > 0 || insertCount > 0 else {
                throw DiffError.outOfRange(field, offset: offset, "an edit at \(offset) removes and inserts nothing")
            }
            guard offset > end else {
                throw DiffError.outOfRange(
                    field, offset: offset,
                    "edits must increase with a gap between them; the edit at \(offset) follows one ending at \(end)")
            }
            end = offset &+ deleteCount
        }
    }
}
