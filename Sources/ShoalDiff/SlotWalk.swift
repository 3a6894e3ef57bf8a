// SlotWalk: steps through up to three sorted field-slot arrays together, one field name at a time.

package import ShoalWire

/// A merge walk over sorted slot arrays: each ``next()`` yields the smallest name not yet
/// visited and each array's slot of that name (nil when the array has none).
package struct SlotWalk {
    let a: [Record.Field], b: [Record.Field], c: [Record.Field]
    var i = 0, j = 0, k = 0

    /// Walks `a` and `b` (and `c`, empty by default).
    package init(_ a: [Record.Field], _ b: [Record.Field], _ c: [Record.Field] = []) {
        self.a = a
        self.b = b
        self.c = c
    }

    /// The next name's slots in `a`, `b` and `c`, or nil when all are exhausted.
    package mutating func next() -> (name: String, a: Record.Field?, b: Record.Field?, c: Record.Field?)? {
        var name: String? = nil
        if i < a.count { name = a[i].name }
        if j < b.count, Self.precedes(b[j].name, name) { name = b[j].name }
        if k < c.count, Self.precedes(c[k].name, name) { name = c[k].name }
        guard let name else { return nil }
        var sa: Record.Field? = nil, sb: Record.Field? = nil, sc: Record.Field? = nil
        if i < a.count, UTF8Order.compare(a[i].name, name) == 0 { sa = a[i]; i &+= 1 }
        if j < b.count, UTF8Order.compare(b[j].name, name) == 0 { sb = b[j]; j &+= 1 }
        if k < c.count, UTF8Order.compare(c[k].name, name) == 0 { sc = c[k]; k &+= 1 }
        return (name, sa, sb, sc)
    }

    static func precedes(_ x: String, _ y: String?) -> Bool {
        guard let y else { return true }
        return UTF8Order.compare(x, y) < 0
    }
}
