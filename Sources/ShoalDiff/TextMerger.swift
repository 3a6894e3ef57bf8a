// TextMerger: a three-way merge of text — edits of different lines both kept, overlapping ones to one side.

/// Merges two edited versions of a text with the version both started from, as diff3 does
/// (Spec/diff-and-merge.md §4.1).
///
/// Each side's edits are found as hunks against the ancestor: whole lines first (common prefix
/// and suffix trimmed, then Myers' diff of the rest), then, where both sides edited lines that
/// overlap or touch, words within those lines. A hunk only one side made is applied; hunks of the
/// two sides that overlap or touch form a *region*, which takes the words both sides edited
/// apart, or, where even those overlap or touch, one side's text — the side that wins (the later
/// writer, as the caller decides). Edits therefore interleave only as whole hunks.
///
/// The result depends only on the three texts and which side wins, never on which side is
/// passed first. Time is bounded: each diff gives up past ``Limits/maxEdits`` edits, and all of
/// them together past ``Limits/maxWork`` steps; then the lines' merge gives nil (the caller keeps
/// the winner's whole text) and a region's merge of words gives the winner's text of the region.
package enum TextMerger {
    /// How much work one merge may do.
    package struct Limits: Sendable {
        /// Most tokens (lines, or words within a region) one diff may remove plus insert.
        package var maxEdits: Int
        /// Most steps the diffs of one merge may take together (a diagonal tried, or a token
        /// compared along one).
        package var maxWork: Int

        /// 1,024 edits a diff, 2²⁴ steps a merge: a few tens of milliseconds at most.
        package init(maxEdits: Int = 1_024, maxWork: Int = 1 << 24) {
            self.maxEdits = maxEdits
            self.maxWork = maxWork
        }
    }

    /// The merge of `first` and `second`, both edited from `ancestor`; where their edits overlap,
    /// `first`'s text if `firstWins`, else `second`'s. Nil when the diff of lines is over
    /// `limits` (the caller then keeps the winner's text).
    package static func merge(
        ancestor: String, _ first: String, _ second: String, firstWins: Bool,
        limits: Limits = Limits()
    ) -> String? {
        if first.utf8.elementsEqual(second.utf8) || second.utf8.elementsEqual(ancestor.utf8) { return first }
        if first.utf8.elementsEqual(ancestor.utf8) { return second }
        var budget = limits.maxWork
        guard
            let bytes = merge(
                .lines(Array(ancestor.utf8)), .lines(Array(first.utf8)), .lines(Array(second.utf8)),
                firstWins: firstWins, words: true, limits: limits, budget: &budget)
        else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The merged bytes of three tokenised texts; nil when a diff is over the limits. `words`:
    /// regions both sides edited are merged again word by word (else they go to the winner).
    static func merge(
        _ o: TokenizedText, _ a: TokenizedText, _ b: TokenizedText, firstWins: Bool, words: Bool,
        limits: Limits, budget: inout Int
    ) -> [UInt8]? {
        guard let ha = TokenDiff.hunks(o, a, maxEdits: limits.maxEdits, budget: &budget),
            let hb = TokenDiff.hunks(o, b, maxEdits: limits.maxEdits, budget: &budget)
        else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(max(a.bytes.count, b.bytes.count))
        var pos = 0, i = 0, j = 0
        while i < ha.count || j < hb.count {
            // A region: the earliest hunk, and every hunk of either side overlapping or touching it.
            let si = i, sj = j
            var start: Int, end: Int
            if j == hb.count || (i < ha.count && ha[i].start <= hb[j].start) {
                (start, end) = (ha[i].start, ha[i].end)
                i &+= 1
            } else {
                (start, end) = (hb[j].start, hb[j].end)
                j &+= 1
            }
            while true {
                if i < ha.count && ha[i].start <= end {
                    end = max(end, ha[i].end)
                    i &+= 1
                } else if j < hb.count && hb[j].start <= end {
                    end = max(end, hb[j].end)
                    j &+= 1
                } else {
                    break
                }
            }
            out += o.bytes(of: pos..<start)
            pos = end
            if j == sj {
                append(a, ha[si..<i], over: o, start..<end, to: &out)
                continue
            }
            if i == si {
                append(b, hb[sj..<j], over: o, start..<end, to: &out)
                continue
            }
            var textA = [UInt8](), textB = [UInt8]()
            append(a, ha[si..<i], over: o, start..<end, to: &textA)
            append(b, hb[sj..<j], over: o, start..<end, to: &textB)
            if textA == textB {
                out += textA
            } else if words,
                let merged = merge(
                    .words(Array(o.bytes(of: start..<end))), .words(textA), .words(textB),
                    firstWins: firstWins, words: false, limits: limits, budget: &budget)
            {
                out += merged
            } else {
                out += firstWins ? textA : textB
            }
        }
        out += o.bytes(of: pos..<o.count)
        return out
    }

    /// Appends `side`'s text of the base tokens `range`: the base's, with `hunks` (all inside
    /// the range) applied.
    static func append(
        _ side: TokenizedText, _ hunks: ArraySlice<Hunk>, over base: TokenizedText, _ range: Range<Int>,
        to out: inout [UInt8]
    ) {
        var at = range.lowerBound
        for h in hunks {
            out += base.bytes(of: at..<h.start)
            out += side.bytes(of: h.sideStart..<h.sideEnd)
            at = h.end
        }
        out += base.bytes(of: at..<range.upperBound)
    }
}
