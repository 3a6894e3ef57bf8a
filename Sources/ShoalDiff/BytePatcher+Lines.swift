// BytePatcher+Lines: edits far apart in one long value as separate patches — the common prefix
// and suffix first, then a line diff of what lies between.

package import ShoalWire

extension BytePatcher {
    /// Middles shorter than this on either side go as one patch: splitting them saves little.
    package static let minimumLineDiffBytes = 256
    /// Longest middle, in lines of the old and the new value together, that is diffed line by
    /// line; longer ones go as one patch.
    package static let maxDiffedLines = 65_536
    /// Most changed lines (insertions plus removals) the line diff looks for: Myers' algorithm
    /// then costs at most (old + new lines) × this many steps; a middle that differs more goes
    /// as one patch, which bounds the time on rewrites.
    package static let maxChangedLines = 128

    /// The patches turning `old` into `new`, at most one per run of changed lines: the common
    /// prefix and suffix are kept (as `patch(from:to:)` does);
    /// when what lies between is long in both values, its lines are diffed and each run of
    /// changed lines trimmed to its own common prefix and suffix. The result is whichever of that
    /// and the single patch encodes smaller; empty when the values are equal.
    package static func patches(from old: UnsafeRawBufferPointer, to new: UnsafeRawBufferPointer) -> [RecordDelta
        .BytePatch]
    {
        guard let one = patch(from: old, to: new) else { return [] }
        guard one.deleteCount >= minimumLineDiffBytes, one.insert.count >= minimumLineDiffBytes else { return [one] }
        let midOld = UnsafeRawBufferPointer(rebasing: old[one.offset..<(one.offset &+ one.deleteCount)])
        let midNew = one.insert
        let linesOld = lines(midOld), linesNew = midNew.withUnsafeBytes { lines($0) }
        guard linesOld.count &+ linesNew.count <= maxDiffedLines, linesOld.count > 1 || linesNew.count > 1 else {
            return [one]
        }
        let marks = midNew.withUnsafeBytes { rawNew in
            let hashOld = linesOld.map { hash(UnsafeRawBufferPointer(rebasing: midOld[$0])) }
            let hashNew = linesNew.map { hash(UnsafeRawBufferPointer(rebasing: rawNew[$0])) }
            return diff(linesOld.count, linesNew.count, maxD: maxChangedLines) { x, y in
                hashOld[x] == hashNew[y] && midOld[linesOld[x]].elementsEqual(rawNew[linesNew[y]])
            }
        }
        guard let (removed, inserted) = marks else { return [one] }
        var out = [RecordDelta.BytePatch]()
        var i = 0, j = 0
        while i < linesOld.count || j < linesNew.count {
            if !(i < linesOld.count && removed[i]) && !(j < linesNew.count && inserted[j]) {
                i &+= 1
                j &+= 1
                continue
            }
            let startI = i, startJ = j
            while i < linesOld.count && removed[i] { i &+= 1 }
            while j < linesNew.count && inserted[j] { j &+= 1 }
            // The bytes of the run in each value, then only what differs inside it.
            let fromOld = startI < linesOld.count ? linesOld[startI].lowerBound : midOld.count
            let toOld = i > startI ? linesOld[i &- 1].upperBound : fromOld
            let fromNew = startJ < linesNew.count ? linesNew[startJ].lowerBound : midNew.count
            let toNew = j > startJ ? linesNew[j &- 1].upperBound : fromNew
            let hunk = midNew.withUnsafeBytes { rawNew in
                patch(
                    from: UnsafeRawBufferPointer(rebasing: midOld[fromOld..<toOld]),
                    to: UnsafeRawBufferPointer(rebasing: rawNew[fromNew..<toNew]))
            }
            guard let hunk else { continue }
            out.append(
                RecordDelta.BytePatch(
                    offset: one.offset &+ fromOld &+ hunk.offset, deleteCount: hunk.deleteCount, insert: hunk.insert))
        }
        // Runs are separated by kept lines, so patches never touch; still, one patch when the split
        // does not pay.
        let split = out.reduce(0) { $0 &+ encodedSize($1) }
        return !out.isEmpty && split < encodedSize(one) ? out : [one]
    }

    /// The patches turning string `old` into `new` (UTF-8 byte offsets); empty when equal.
    package static func patches(from old: String, to new: String) -> [RecordDelta.BytePatch] {
        var a = old, b = new
        return a.withUTF8 { pa in
            b.withUTF8 { pb in patches(from: UnsafeRawBufferPointer(pa), to: UnsafeRawBufferPointer(pb)) }
        }
    }

    /// The patches turning bytes `old` into `new`; empty when equal.
    package static func patches(from old: [UInt8], to new: [UInt8]) -> [RecordDelta.BytePatch] {
        old.withUnsafeBytes { pa in new.withUnsafeBytes { pb in patches(from: pa, to: pb) } }
    }

    /// Myers' greedy diff of two sequences of `n` and `m` elements compared by `same`: which
    /// elements of the first are removed and which of the second inserted, in a shortest edit
    /// script; nil when that needs more than `maxD` edits. O((n + m) × maxD) time.
    static func diff(_ n: Int, _ m: Int, maxD: Int, same: (Int, Int) -> Bool) -> (removed: [Bool], inserted: [Bool])? {
        let off = maxD &+ 1
        var v = [Int](repeating: 0, count: 2 &* maxD &+ 3)
        var trace = [[Int]]()
        var found: Int? = nil
        outer: for d in 0...maxD {
            trace.append(v)
            for k in stride(from: -d, through: d, by: 2) {
                var x =
                    k == -d || (k != d && v[off &+ k &- 1] < v[off &+ k &+ 1])
                    ? v[off &+ k &+ 1] : v[off &+ k &- 1] &+ 1
                var y = x &- k
                while x < n && y < m && same(x, y) {
                    x &+= 1
                    y &+= 1
                }
                v[off &+ k] = x
                if x >= n && y >= m {
                    found = d
                    break outer
                }
            }
        }
        guard let total = found else { return nil }
        var removed = [Bool](repeating: false, count: n), inserted = [Bool](repeating: false, count: m)
        var x = n, y = m
        for d in stride(from: total, to: 0, by: -1) {
            // trace[d] is the state before step d: where step d - 1 left each diagonal.
            let before = trace[d]
            let k = x &- y
            let down = k == -d || (k != d && before[off &+ k &- 1] < before[off &+ k &+ 1])
            let prevK = down ? k &+ 1 : k &- 1
            let prevX = before[off &+ prevK], prevY = prevX &- prevK
            if down { inserted[prevY] = true } else { removed[prevX] = true }
            x = prevX
            y = prevY
        }
        return (removed, inserted)
    }

    /// A line's hash, to compare lines quickly (equal hashes are confirmed byte by byte).
    static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
        var h = Hasher()
        h.combine(bytes: bytes)
        return h.finalize()
    }

    /// The byte ranges of `bytes`' lines, each ending after its newline (the last may have none).
    static func lines(_ bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
        var out = [Range<Int>]()
        var start = 0
        for (k, b) in bytes.enumerated() where b == 0x0A {
            out.append(start..<(k &+ 1))
            start = k &+ 1
        }
        if start < bytes.count { out.append(start..<bytes.count) }
        return out
    }
}
