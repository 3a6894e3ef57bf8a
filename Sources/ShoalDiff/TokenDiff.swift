// TokenDiff: the hunks that turn one tokenised text into another — Myers' diff under a work budget.

/// A text cut into tokens (lines, or words and single punctuation bytes), as byte ranges of its
/// UTF-8 bytes: token `i` is `bytes[bounds[i]..<bounds[i + 1]]`.
struct TokenizedText {
    let bytes: [UInt8]
    /// Token starts, then the end of the last token: `count + 1` entries, the first 0.
    let bounds: [Int]

    var count: Int { bounds.count &- 1 }

    /// The bytes of token `i`.
    func token(_ i: Int) -> ArraySlice<UInt8> { bytes[bounds[i]..<bounds[i &+ 1]] }

    /// The bytes of tokens `range`.
    func bytes(of range: Range<Int>) -> ArraySlice<UInt8> { bytes[bounds[range.lowerBound]..<bounds[range.upperBound]] }

    /// `bytes` cut after every newline (a last line without one is a token too).
    static func lines(_ bytes: [UInt8]) -> TokenizedText {
        var bounds = [0]
        for (i, b) in bytes.enumerated() where b == 0x0A { bounds.append(i &+ 1) }
        if bounds.last != bytes.count { bounds.append(bytes.count) }
        return TokenizedText(bytes: bytes, bounds: bounds)
    }

    /// `bytes` cut into words: each token is a run of spaces and tabs (possibly empty), then a
    /// run of word bytes — ASCII letters, digits and `_`, and every non-ASCII byte — or else one
    /// other byte. Spaces go with the word after them, so two edits on either side of a word do
    /// not meet on the space between, and a space alone never matches. A multi-byte UTF-8 scalar
    /// never straddles a cut: cuts fall next to ASCII bytes only, and a scalar's bytes are all
    /// non-ASCII.
    static func words(_ bytes: [UInt8]) -> TokenizedText {
        func isWord(_ b: UInt8) -> Bool {
            b >= 0x80 || b == 0x5F || (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A)
        }
        var bounds = [0]
        var i = 0
        let n = bytes.count
        while i < n {
            while i < n && (bytes[i] == 0x20 || bytes[i] == 0x09) { i &+= 1 }
            if i < n {
                if isWord(bytes[i]) {
                    while i < n && isWord(bytes[i]) { i &+= 1 }
                } else {
                    i &+= 1
                }
            }
            bounds.append(i)
        }
        return TokenizedText(bytes: bytes, bounds: bounds)
    }
}

/// One edit of a diff: tokens `start..<end` of the base replaced by tokens
/// `sideStart..<sideEnd` of the other text. Either range may be empty, not both.
struct Hunk: Equatable {
    var start: Int
    var end: Int
    var sideStart: Int
    var sideEnd: Int
}

/// Myers' diff of two token sequences, bounded: at most `maxEdits` tokens removed plus inserted,
/// and at most `budget` steps (a diagonal tried, or a token compared along one).
enum TokenDiff {
    /// The hunks turning `base` into `side`, in base order, separated by at least one unchanged
    /// token; nil when more than `maxEdits` edits would be needed, or `budget` runs out (it is
    /// decreased by the steps taken, also when the diff gives up). The common prefix and suffix
    /// are trimmed first, at a cost linear in their bytes that the budget does not count.
    static func hunks(_ base: TokenizedText, _ side: TokenizedText, maxEdits: Int, budget: inout Int) -> [Hunk]? {
        let n = base.count, m = side.count
        var lo = 0
        while lo < n && lo < m && base.token(lo) == side.token(lo) { lo &+= 1 }
        var endN = n, endM = m
        while endN > lo && endM > lo && base.token(endN &- 1) == side.token(endM &- 1) {
            endN &-= 1
            endM &-= 1
        }
        if endN == lo && endM == lo { return [] }
        if endN == lo || endM == lo { return [Hunk(start: lo, end: endN, sideStart: lo, sideEnd: endM)] }
        // Tokens as small integers, equal for equal bytes, so Myers compares integers.
        var ids = [ArraySlice<UInt8>: Int32]()
        func intern(_ t: TokenizedText, _ r: Range<Int>) -> [Int32] {
            r.map { i in
                let key = t.token(i)
                if let id = ids[key] { return id }
                let id = Int32(truncatingIfNeeded: ids.count)
                ids[key] = id
                return id
            }
        }
        let a = intern(base, lo..<endN), b = intern(side, lo..<endM)
        guard let (removed, inserted) = myers(a, b, maxEdits: maxEdits, budget: &budget) else { return nil }
        var out = [Hunk]()
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if (i == a.count || !removed[i]) && (j == b.count || !inserted[j]) {
                i &+= 1
                j &+= 1
                continue
            }
            let si = i, sj = j
            while i < a.count && removed[i] { i &+= 1 }
            while j < b.count && inserted[j] { j &+= 1 }
            out.append(Hunk(start: lo &+ si, end: lo &+ i, sideStart: lo &+ sj, sideEnd: lo &+ j))
        }
        return out
    }

    /// Which tokens of `a` are removed and which of `b` inserted by a shortest edit script
    /// (Myers 1986, greedy forward pass, every step's furthest-reaching points kept for the walk
    /// back: (D + 1)² integers for D edits); nil past `maxEdits` edits or `budget` steps.
    static func myers(_ a: [Int32], _ b: [Int32], maxEdits: Int, budget: inout Int) -> (
        removed: [Bool], inserted: [Bool]
    )? {
        let n = a.count, m = b.count
        let maxD = min(maxEdits, n &+ m)
        let off = maxD &+ 1
        // v[off + k]: the furthest x reached on diagonal k (x − y = k); −1 where none is.
        var v = [Int](repeating: -1, count: 2 &* maxD &+ 3)
        // After step d, v[off − d ... off + d] is kept at trace[d * d ..< (d + 1) * (d + 1)].
        var trace = [Int32]()
        for d in 0...maxD {
            var k = -d
            while k <= d {
                let start = d == 0 ? 0 : step(k, n: n, m: m, down: v[off &+ k &+ 1], right: v[off &+ k &- 1]).x
                if start >= 0 {
                    var x = start, y = start &- k
                    while x < n && y < m && a[x] == b[y] {
                        x &+= 1
                        y &+= 1
                    }
                    budget &-= 1 &+ (x &- start)
                    v[off &+ k] = x
                    if x == n && y == m {
                        trace.append(contentsOf: v[(off &- d)...(off &+ d)].lazy.map { Int32(truncatingIfNeeded: $0) })
                        return walkBack(trace, d: d, n: n, m: m)
                    }
                } else {
                    v[off &+ k] = -1
                    budget &-= 1
                }
                if budget < 0 { return nil }
                k &+= 2
            }
            trace.append(contentsOf: v[(off &- d)...(off &+ d)].lazy.map { Int32(truncatingIfNeeded: $0) })
        }
        return nil
    }

    /// Where a path on diagonal `k` starts at this step: from diagonal k + 1 moving down (an
    /// insertion; `down` is its x there) or from k − 1 moving right (a removal), whichever
    /// reaches further inside the n × m grid, down on a tie; x = −1 when neither can.
    static func step(_ k: Int, n: Int, m: Int, down: Int, right: Int) -> (x: Int, fromDown: Bool) {
        let d = down >= 0 && down &- k <= m ? down : -1
        let r = right >= 0 && right &+ 1 <= n && right &+ 1 &- k <= m && right &+ 1 &- k >= 0 ? right &+ 1 : -1
        return r > d ? (r, false) : (d, true)
    }

    /// The removals and insertions of the path that reached (n, m) at step `d`, read back from
    /// the kept points of each step.
    static func walkBack(_ trace: [Int32], d last: Int, n: Int, m: Int) -> (removed: [Bool], inserted: [Bool]) {
        var removed = [Bool](repeating: false, count: n)
        var inserted = [Bool](repeating: false, count: m)
        /// The x step `d` reached on diagonal k (−1 if none or outside the kept range).
        func reached(_ d: Int, _ k: Int) -> Int {
            guard k >= -d && k <= d else { return -1 }
            return Int(trace[d &* d &+ k &+ d])
        }
        var x = n, y = m
        var d = last
        while d > 0 {
            let k = x &- y
            let (start, fromDown) = step(k, n: n, m: m, down: reached(d &- 1, k &+ 1), right: reached(d &- 1, k &- 1))
            // The snake of this step ran from `start` to x; before it, one insertion or removal.
            if fromDown {
                let prevY = start &- k &- 1
                inserted[prevY] = true
                x = start
                y = prevY
            } else {
                let prevX = start &- 1
                removed[prevX] = true
                x = prevX
                y = start &- k
            }
            d &-= 1
        }
        return (removed, inserted)
    }
}
