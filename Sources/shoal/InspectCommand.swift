// InspectCommand: `shoal inspect` decodes any Shoal bytes — frames, records, deltas, tokens — the `protoc --decode_raw` of Shoal.

import ArgumentParser
import Foundation
import Shoal

struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect", abstract: "Decode a Shoal frame stream, record, delta, tombstone or change token.",
        discussion: "Reads FILE (or - for standard input). Bytes starting with \"SH\" are frames, \"ST\" a token; base64url text is a token; anything else a record unless --as says otherwise. Malformed input exits with status 3 and says where and what was expected.")
    @Argument(help: "A file, or - for standard input.") var file: String
    @Option(name: .long, help: "What the bytes are: auto, frames, record, delta, tombstone, token.") var `as` = "auto"
    @Option(name: .long, help: "The zone a delta belongs to (name or name@owner).") var zone = "notes"
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        try await reportFailures {
            let bytes: [UInt8]
            if file == "-" {
                bytes = [UInt8](FileHandle.standardInput.readDataToEndOfFile())
            } else {
                guard let d = FileManager.default.contents(atPath: file) else { throw CommandFailure(.notFound, "cannot read \(file)") }
                bytes = [UInt8](d)
            }
            var kind = self.as
            var input = bytes
            if kind == "auto" {
                let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                if bytes.starts(with: [0x53, 0x48]) { kind = "frames" }
                else if bytes.starts(with: [0x53, 0x54]) { kind = "token" }
                else if !text.isEmpty, let t = ChangeToken(text: text) { kind = "token"; input = t.bytes }
                else { kind = "record" }
            }
            do {
                let out: Any = try decode(kind, input)
                if json { Console.current.line(RecordFormatting.jsonText(out)) } else { describe(out, indent: "") }
            } catch let e as WireError {
                throw CommandFailure(.badInput, "not a valid \(kind): \(e.code) at byte \(e.offset): \(e.detail)")
            }
        }
    }

    func decode(_ kind: String, _ bytes: [UInt8]) throws -> Any {
        switch kind {
        case "frames":
            var reader = FrameReader()
            let frames = try reader.frames(in: bytes)
            if reader.bufferedByteCount > 0 {
                throw WireError(.truncated, at: reader.consumedByteCount, "the last frame is incomplete: \(reader.bufferedByteCount) byte(s) of it")
            }
            return frames.map { f -> [String: Any] in
                var o: [String: Any] = ["type": f.type.description, "payload_bytes": f.payload.count, "compression": "\(f.compression)"]
                // The frame is valid; a payload that is not the message its type names is
                // reported beside it (frames carry anything; the replication layer rejects it).
                do { o["payload"] = try payload(f) } catch { o["payload_error"] = "\(error)" }
                return o
            }
        case "record": return RecordFormatting.json(try Record(decoding: bytes))
        case "delta":
            let d = try RecordDelta(decoding: bytes, zone: parseZone(zone))
            return ["base": String(d.baseTag, radix: 16), "system": d.system != nil, "operations": d.operations.map { "\($0)" }]
        case "tombstone":
            let t = try Tombstone(decoding: bytes)
            return ["name": t.id.name, "zone": t.id.zone.description, "type": t.recordType, "deletedBy": t.deletedBy.hex, "deleted": t.deletionDate.description]
        case "token":
            let c = try ChangeToken(bytes: bytes).contents()
            var o: [String: Any] = ["kind": "\(c.kind)", "incarnation": c.incarnation.hex, "vector": c.vector.entries.map { ["node": $0.node.hex, "hlc": $0.hlc.description] }]
            if let cur = c.cursor { o["cursor"] = ["source": cur.source.hex, "sequence": cur.sequence] }
            return o
        default:
            throw CommandFailure(.usage, "--as \(kind) is not one of auto, frames, record, delta, tombstone, token")
        }
    }

    func payload(_ f: Frame) throws -> Any {
        switch f.type {
        case .hello:
            let m = try HelloMessage(decoding: f.payload)
            return ["node": m.node.hex, "name": m.name, "versions": "\(m.minimumVersion)-\(m.maximumVersion)", "zones": m.zones.map(\.description), "dictionaries": m.dictionaries]
        case .changes:
            let m = try ChangesMessage(decoding: f.payload)
            var o: [String: Any] = ["zone": m.zone.description, "batch": m.batch, "caughtUp": m.isCaughtUp, "records": m.records.map(RecordFormatting.json)]
            if m.isReset { o["reset"] = true }
            if let base = m.base {
                o["sparseBase"] = base.description
                o["sparseRecords"] = m.sparseRecords.map { s -> [String: Any] in
                    var item: [String: Any] = ["name": s.id.name, "type": s.recordType, "entries": s.entries.description,
                                               "heads": s.heads.map { "\($0.node.short)\($0.isDeletion ? " (delete)" : "")" },
                                               "fields": Dictionary(s.fields.map { ($0.name, $0.value.map { "\($0)" } ?? "(removed)") }, uniquingKeysWith: { a, _ in a })]
                    // Delta slots: the edit of the slot the receiver holds, named by its stamp.
                    if !s.deltas.isEmpty {
                        item["deltas"] = Dictionary(s.deltas.map { d -> (String, String) in
                            let edits: String
                            switch d.edit {
                            case .patch(let p): edits = p.map { "patch @\($0.offset) -\($0.deleteCount) +\($0.insert.count) bytes" }.joined(separator: ", ")
                            case .splice(let kind, let sp): edits = sp.map { "splice @\($0.offset) -\($0.deleteCount) +\($0.insert.count) \(kind)" }.joined(separator: ", ")
                            }
                            return (d.name, "\(edits) on \(d.baseStamp.node.short)@\(d.baseStamp.hlc) (digest \(String(d.baseDigest, radix: 16)))")
                        }, uniquingKeysWith: { a, _ in a })
                    }
                    return item
                }
            }
            return o
        case .liveChanges:
            // The zone is the subscription's, which only the connection knows: the header alone.
            return ["subscription": try LiveChangesMessage.subscription(of: f.payload), "bytes": f.payload.count]
        case .subscribe:
            let m = try SubscribeMessage(decoding: f.payload)
            return ["zone": m.zone.description, "window": m.window, "fromStart": m.token == nil]
        case .acknowledgement:
            let m = try AcknowledgementMessage(decoding: f.payload)
            return ["zone": m.zone.description, "batch": m.batch]
        case .zones: return try ZonesMessage(decoding: f.payload).zones.map(\.description)
        case .wantWhole:
            let m = try WantWholeMessage(decoding: f.payload)
            return ["zone": m.zone.description, "records": m.names]
        case .error: return try ErrorMessage(decoding: f.payload).description
        case .ping, .pong: return ["nonce": try PingMessage(decoding: f.payload).nonce]
        case .goodbye: return try GoodbyeMessage(decoding: f.payload).reason
        default: return "\(f.payload.count) bytes of an unknown frame type (skipped by peers)"
        }
    }

    /// Indented text for people.
    func describe(_ value: Any, indent: String) {
        switch value {
        case let o as [String: Any]:
            for k in o.keys.sorted() {
                guard let v = o[k] else { continue }
                if v is [String: Any] || (v as? [Any])?.isEmpty == false {
                    Console.current.line("\(indent)\(k):")
                    describe(v, indent: indent + "  ")
                } else {
                    Console.current.line("\(indent)\(k): \(v)")
                }
            }
        case let a as [Any]:
            for (i, v) in a.enumerated() {
                Console.current.line("\(indent)- [\(i)]")
                describe(v, indent: indent + "  ")
            }
        default:
            Console.current.line("\(indent)\(value)")
        }
    }
}
