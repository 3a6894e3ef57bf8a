// TextMergerTests: the three-way text merge — disjoint edits both kept, overlapping ones to the
// winner, the same result whichever side comes first, and bounded work on 1 MiB texts.

import Testing
import ShoalSamples
@testable import ShoalDiff

@Suite struct TextMergerTests {
    static let ancestor =
        "First paragraph, about apples.\n\nSecond paragraph, about pears.\n\nThird paragraph, about plums.\n"

    /// `TextMerger.merge` both ways round (the winner the same side each time): the two results,
    /// which must be equal.
    static func merged(_ o: String, _ a: String, _ b: String, aWins: Bool) -> (String?, String?) {
        (TextMerger.merge(ancestor: o, a, b, firstWins: aWins), TextMerger.merge(ancestor: o, b, a, firstWins: !aWins))
    }

    @Test(arguments: [false, true])
    func editsOfDifferentParagraphsAreBothKept(aWins: Bool) {
        let a = Self.ancestor.replacing("about apples", with: "about green apples")
        let b = Self.ancestor.replacing(
            "Third paragraph, about plums.\n", with: "Third paragraph, about plums.\nAnd a fourth line.\n")
        let (ab, ba) = Self.merged(Self.ancestor, a, b, aWins: aWins)
        #expect(
            ab
                == "First paragraph, about green apples.\n\nSecond paragraph, about pears.\n\nThird paragraph, about plums.\nAnd a fourth line.\n"
        )
        #expect(ab == ba)
    }

    @Test(arguments: [false, true])
    func editsOfDifferentWordsOfOneLineAreBothKept(aWins: Bool) {
        let o = "The quick brown fox jumps over the lazy dog"
        let (ab, ba) = Self.merged(
            o, "The slow brown fox jumps over the lazy dog", "The quick brown fox jumps over the lazy cat", aWins: aWins
        )
        #expect(ab == "The slow brown fox jumps over the lazy cat")
        #expect(ab == ba)
    }

    @Test(arguments: [false, true])
    func overlappingEditsTakeTheWinnersText(aWins: Bool) {
        let a = Self.ancestor.replacing("about pears", with: "about ripe apricots")
        let b = Self.ancestor.replacing("about pears", with: "about quinces and more")
            .replacing("about apples", with: "about red apples")
        let (ab, ba) = Self.merged(Self.ancestor, a, b, aWins: aWins)
        let second = aWins ? "about ripe apricots" : "about quinces and more"
        #expect(
            ab
                == "First paragraph, about red apples.\n\nSecond paragraph, \(second).\n\nThird paragraph, about plums.\n",
            "the overlap goes to the winner; b's edit of the first paragraph is kept either way")
        #expect(ab == ba)
        // Words inserted on either side of one unchanged word do not overlap: both are kept.
        let c = Self.ancestor.replacing("about pears", with: "about ripe pears")
        let d = Self.ancestor.replacing("about pears", with: "about pears and quinces")
        #expect(
            TextMerger.merge(ancestor: Self.ancestor, c, d, firstWins: aWins)?.contains("about ripe pears and quinces.")
                == true)
    }

    @Test(arguments: [false, true])
    func aDeletedLineAgainstAnEditOfItGoesToTheWinner(aWins: Bool) {
        let a = Self.ancestor.replacing("Second paragraph, about pears.\n\n", with: "")
        let b = Self.ancestor.replacing("about pears", with: "about pears, edited")
        let (ab, ba) = Self.merged(Self.ancestor, a, b, aWins: aWins)
        #expect(ab == (aWins ? a : b))
        #expect(ab == ba)
    }

    @Test(arguments: [false, true])
    func twoInsertionsAtOnePlaceKeepTheWinners(aWins: Bool) {
        let o = "one\ntwo\n"
        let (ab, ba) = Self.merged(o, "one\ntwo\nthree from a\n", "one\ntwo\nthree from b\n", aWins: aWins)
        #expect(ab == (aWins ? "one\ntwo\nthree from a\n" : "one\ntwo\nthree from b\n"))
        #expect(ab == ba)
    }

    @Test func theSameEditOnBothSidesIsKeptOnce() {
        let a = Self.ancestor.replacing("pears", with: "quinces")
        #expect(TextMerger.merge(ancestor: Self.ancestor, a, a, firstWins: false) == a)
        let b = a.replacing("plums", with: "cherries")
        #expect(TextMerger.merge(ancestor: Self.ancestor, a, b, firstWins: true) == b)
        #expect(TextMerger.merge(ancestor: Self.ancestor, Self.ancestor, b, firstWins: true) == b)
        #expect(TextMerger.merge(ancestor: Self.ancestor, a, Self.ancestor, firstWins: false) == a)
    }

    @Test func nonASCIITextStaysWholeScalars() {
        let o = "Grüße aus Köln, 東京 und Zürich\nzweite Zeile\n"
        let a = "Grüße aus Köln, 東京 und Genève\nzweite Zeile\n"
        let b = "Schöne Grüße aus Köln, 東京 und Zürich\nzweite Zeile ✓\n"
        #expect(
            TextMerger.merge(ancestor: o, a, b, firstWins: true)
                == "Schöne Grüße aus Köln, 東京 und Genève\nzweite Zeile ✓\n")
        // Edits of one word built of multi-byte scalars overlap as a whole word.
        let c = "Grüße aus Köln, 東西 und Zürich\nzweite Zeile\n", d = "Grüße aus Köln, 北京 und Zürich\nzweite Zeile\n"
        #expect(TextMerger.merge(ancestor: o, c, d, firstWins: false) == d)
    }

    /// Seeded random texts of unique lines, two sides editing random lines: the merge is the same
    /// whichever side comes first; and when each side edits lines the other does not touch, with
    /// an unchanged line between, both sides' edits are all in the result.
    @Test(arguments: 0..<200)
    func randomEditsMergeSymmetricallyAndKeepDisjointEdits(seed: UInt64) {
        var rng = SplitMix64(seed: 0x7E47_0000 &+ seed)
        let count = Int(rng.next() % 40)
        let lines = (0..<count).map { i in
            "line \(i) " + String(repeating: "w\(rng.next() % 9) ", count: Int(rng.next() % 6)) + "\n"
        }
        let o = lines.joined()
        // Disjoint: a edits lines below `split`, b lines above it; `split` itself is untouched.
        let split = count == 0 ? 0 : Int(rng.next() % UInt64(count))
        var fresh = 0
        func edited(_ range: Range<Int>, _ side: String, disjoint: Bool) -> String {
            var out = [String]()
            for i in 0..<count {
                guard range.contains(i), rng.next() % 4 == 0 else { out.append(lines[i]); continue }
                fresh += 1
                switch rng.next() % 4 {
                case 0: break  // deleted
                case 1: out.append("new \(side)\(fresh)\n")  // replaced
                case 2: out += [lines[i], "new \(side)\(fresh)\n"]  // a line inserted after it
                // A word added.
                default: out.append(lines[i].replacing("line \(i) ", with: "line \(i) \(side)\(fresh) "))
                }
            }
            if !disjoint && rng.next() % 3 == 0 { out.append("tail \(side)\n") }
            return out.joined()
        }
        let a = edited(0..<split, "a", disjoint: true),
            b = edited((split + 1)..<max(count, split + 1), "b", disjoint: true)
        var expected = [String]()
        let aLines = a.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        let bLines = b.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        // a's text up to and including `split`, then b's text after `split`.
        if count > 0 {
            let inA = aLines.firstIndex { $0 == lines[split].dropLast() } ?? aLines.endIndex
            let inB = bLines.firstIndex { $0 == lines[split].dropLast() } ?? bLines.endIndex
            expected =
                aLines[..<inA].map { $0 + "\n" } + [lines[split]]
                + bLines[bLines.index(after: min(inB, bLines.endIndex - 1))...].map { $0 + "\n" }
        }
        for aWins in [false, true] {
            let (ab, ba) = Self.merged(o, a, b, aWins: aWins)
            #expect(ab == ba, "seed \(seed): the merge depends on the order of its sides")
            #expect(ab == expected.joined(), "seed \(seed): a disjoint edit was lost")
        }
        // Overlapping random edits: still symmetric, and never over the limits at this size.
        let c = edited(0..<count, "c", disjoint: false), d = edited(0..<count, "d", disjoint: false)
        for cWins in [false, true] {
            let (cd, dc) = Self.merged(o, c, d, aWins: cWins)
            #expect(cd != nil && cd == dc, "seed \(seed): \(String(describing: cd)) against \(String(describing: dc))")
        }
    }

    /// 1 MiB of text, a few edits on each side far apart: both kept, in a few thousand steps of
    /// the diff (the budget is 2²⁴).
    @Test func aMebibyteFieldWithFewEditsMergesInFewSteps() throws {
        let lines = (0..<16_384).map { i in "line \(String(i + 100_000)) " + String(repeating: "x", count: 51) + "\n" }
        #expect(lines.reduce(0) { $0 + $1.utf8.count } == 1 << 20)
        var a = lines, b = lines
        a[10] = "edited on a\n"
        a.insert("inserted on a\n", at: 100)
        b[16_000] = b[16_000].replacing("xxxx", with: "yyyy")
        b.remove(at: 8_000)
        var expected = lines
        expected[16_000] = b[15_999]
        expected.remove(at: 8_000)
        expected[10] = "edited on a\n"
        expected.insert("inserted on a\n", at: 100)
        let limits = TextMerger.Limits()
        var budget = limits.maxWork
        let merged = try #require(
            TextMerger.merge(
                .lines(Array(lines.joined().utf8)), .lines(Array(a.joined().utf8)),
                .lines(Array(b.joined().utf8)), firstWins: true, words: true,
                limits: limits, budget: &budget))
        #expect(merged == Array(expected.joined().utf8))
        let steps = limits.maxWork - budget
        #expect(steps < 50_000, "\(steps) steps")
        print("text-merge 1 MiB: \(steps) diff steps for 4 edits")
    }

    /// Two unrelated 1 MiB rewrites of a text: the diff gives up at its edit limit, or at its step
    /// limit when that is lower, and the caller keeps the winner's text.
    @Test func aMebibyteRewriteGivesUpWithinItsLimits() {
        var rng = SplitMix64(seed: 42)
        func text() -> String {
            (0..<16_384).map { _ in "\(rng.next())" + String(repeating: "z", count: 43) + "\n" }.joined()
        }
        let o = text(), a = text(), b = text()
        #expect(TextMerger.merge(ancestor: o, a, b, firstWins: true) == nil)
        var budget = 10_000
        let limits = TextMerger.Limits(maxEdits: 1 << 20, maxWork: budget)
        #expect(
            TextMerger.merge(
                .lines(Array(o.utf8)), .lines(Array(a.utf8)), .lines(Array(b.utf8)), firstWins: true,
                words: true, limits: limits, budget: &budget) == nil)
        #expect(budget < 0 && budget > -100, "stopped as soon as the steps ran out: \(budget)")
    }
}
