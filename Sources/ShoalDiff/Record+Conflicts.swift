// Record+Conflicts: which fields two concurrent versions of a record both changed, differently.

public import ShoalWire

/// The names of the fields two versions of one record both changed without seeing the other's
/// write, to different values, in field-name order: the fields ``merge(_:_:)`` decides by
/// last-writer-wins, where one side's edit is lost.
///
/// A field is in conflict when both versions hold a slot for it (a value or a removal marker;
/// of concurrent slots, the first), the slots differ in value, and neither slot's stamp is covered by the other version's vector
/// (or both are). A field only one side holds, or one whose older slot the other side has seen,
/// merges without loss and is not listed. Versions one of which dominates the other have no
/// conflicts. Deterministic: every node computes the same list from the same two versions.
public func conflictingFields(_ a: Record, _ b: Record) -> [String] {
    guard a.id == b.id, a.versionVector.compare(b.versionVector) == .concurrent else { return [] }
    var out = [String]()
    var i = 0, j = 0
    // Each field's value: the first of its slots.
    let fa = a.withoutConcurrentSlots.fields, fb = b.withoutConcurrentSlots.fields
    while i < fa.count && j < fb.count {
        let c = UTF8Order.compare(fa[i].name, fb[j].name)
        if c < 0 {
            i += 1
        } else if c > 0 {
            j += 1
        } else {
            let x = fa[i], y = fb[j]
            if x.value != y.value,
                DotMerge.superseded(x, by: b.versionVector) == DotMerge.superseded(y, by: a.versionVector)
            {
                out.append(x.name)
            }
            i += 1
            j += 1
        }
    }
    return out
}
