// RecordFormatting: records, values and tables for people, and their JSON form for scripts.

import Foundation
import Shoal

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

    /// A value as JSON.
    static func json(_ v: FieldValue) -> Any {
        switch v {
        case .string(let s): return s
        case .int64(let i): return i
        case .double(let d): return d.isFinite ? d : String(d)
        case .bool(let b): return b
        case .bytes(let b): return ["bytes": b.map { String(format: "%02x", $0) }.joined()]
        case .date(let t): return ["date": t.description]
        case .reference(let r): return ["reference": r.recordID.name, "zone": r.recordID.zone.description, "deleteSelf": r.action == .deleteSelf]
        case .asset(let a): return ["asset": "\(a)"]
        case .location(let l): return ["latitude": l.latitude, "longitude": l.longitude]
        case .list(let l): return l.elements.map(json)
        }
    }

    /// The other slots of each field with concurrent slots (a merge of concurrent writes that no
    /// save has resolved yet): values, and null for a removal.
    static func concurrentValues(_ r: Record) -> [(name: String, values: [FieldValue?])] {
        var out = [(name: String, values: [FieldValue?])]()
        var i = 0
        while i < r.fields.count {
            let run = r.slots(for: r.fields[i].name)
            if run.count > 1 { out.append((r.fields[i].name, run.dropFirst().map(\.value))) }
            i += max(run.count, 1)
        }
        return out
    }

    /// A record as JSON: ID, zone, type, fields (each field's value: the first of its slots),
    /// the other values of fields with concurrent slots, and system fields.
    static func json(_ r: Record) -> [String: Any] {
        var fields = [String: Any]()
        for k in r.allKeys { if let v = r[k] { fields[k] = json(v) } }
        var o: [String: Any] = ["name": r.id.name, "zone": r.id.zone.description, "type": r.recordType, "fields": fields,
                                "deleted": r.isDeleted]
        let concurrent = concurrentValues(r)
        if !concurrent.isEmpty {
            o["concurrent"] = Dictionary(uniqueKeysWithValues: concurrent.map { c in
                (c.name, c.values.map { v -> Any in v.map(json) ?? NSNull() })
            })
        }
        if let t = r.changeTag { o["changeTag"] = t }
        if let d = r.modificationDate { o["modified"] = d.description }
        if let n = r.modifiedBy { o["modifiedBy"] = n.hex }
        if let d = r.creationDate { o["created"] = d.description }
        if let n = r.createdBy { o["createdBy"] = n.hex }
        return o
    }

    /// A record for people: a header line, then one line per field.
    static func lines(_ r: Record) -> [String] {
        var out = ["\(r.recordType) \(r.id.name) in \(r.id.zone)\(r.isDeleted ? " (deleted)" : "")"]
        let concurrent = Dictionary(concurrentValues(r).map { ($0.name, $0.values) }, uniquingKeysWith: { a, _ in a })
        for k in r.allKeys {
            guard let v = r[k] else { continue }
            let others = concurrent[k].map { vs in "  (concurrent: " + vs.map { $0.map(text) ?? "removed" }.joined(separator: ", ") + ")" } ?? ""
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
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// A table with aligned columns.
    static func table(_ header: [String], _ rows: [[String]]) -> [String] {
        var widths = header.map(\.count)
        for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in i == cells.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }.joined(separator: "  ")
        }
        return [line(header)] + rows.map(line)
    }
}
