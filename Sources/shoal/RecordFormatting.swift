// RecordFormatting: records, values and tables for people, and their JSON form for scripts.

import Foundation
import Shoal
import ShoalWireJSON

enum RecordFormatting {
    /// A value as text: strings as they are, others in the form `put` accepts.
    static func text(_ v: FieldValue) -> String {
        switch v {
        case .string(let s): return s
        case .int64(let i): return String(i)
        case .double(let d): return String(d)
        case .bool(let b): return String(b)
        case .bytes(let b): return "<\(b.count) bytes>"
        case .date(let t): return t.description
        case .reference(let r): return ">\(r.recordID.name)\(r.action == .deleteSelf ? " (deleteSelf)" : "")"
        case .asset(let a): return "asset \(a)"
        case .location(let l): return "@\(l.latitude),\(l.longitude)"
        case .list(let l): return "[" + l.elements.map(text).joined(separator: ",") + "]"
        }
    }

    /// A value as JSON (the form `shoal inspect` prints).
    static func json(_ v: FieldValue) -> Any { Inspection.value(v, assets: .summary) }

    /// The other slots of each field with concurrent slots: values, and null for a removal.
    static func concurrentValues(_ r: Record) -> [(name: String, values: [FieldValue?])] {
        Inspection.concurrentValues(r)
    }

    /// A record as JSON: ID, zone, type, fields, concurrent values and system fields.
    static func json(_ r: Record) -> [String: Any] { Inspection.record(r, assets: .summary) }

    /// A record for people: a header line, then one line per field.
    static func lines(_ r: Record) -> [String] {
        var out = ["\(r.recordType) \(r.id.name) in \(r.id.zone)\(r.isDeleted ? " (deleted)" : "")"]
        let concurrent = Dictionary(concurrentValues(r).map { ($0.name, $0.values) }, uniquingKeysWith: { a, _ in a })
        for k in r.allKeys {
            guard let v = r[k] else { continue }
            let others =
                concurrent[k].map { vs in
                    "  (concurrent: " + vs.map { $0.map(text) ?? "removed" }.joined(separator: ", ") + ")"
                } ?? ""
            out.append("  \(k) = \(text(v))\(others)")
        }
        var system = [String]()
        if let d = r.modificationDate { system.append("modified \(d)") }
        if let n = r.modifiedBy { system.append("by \(n.short)") }
        if let t = r.changeTag { system.append("tag \(t)") }
        if !system.isEmpty { out.append("  (" + system.joined(separator: ", ") + ")") }
        return out
    }

    /// Pretty JSON text of any JSON object.
    static func jsonText(_ object: Any) -> String {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object,
                options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// A table with aligned columns.
    static func table(_ header: [String], _ rows: [[String]]) -> [String] {
        var widths = header.map(\.count)
        for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in
                i == cells.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return [line(header)] + rows.map(line)
    }
}
