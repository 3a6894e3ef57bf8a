// InspectCommand: `shoal inspect` decodes any Shoal bytes — frames, records, deltas, tokens — the `protoc --decode_raw` of Shoal.

import ArgumentParser
import Foundation
import Shoal
import ShoalWireJSON

struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect", abstract: "Decode a Shoal frame stream, record, delta, tombstone or change token.",
        discussion:
            "Reads FILE (or - for standard input). Bytes starting with \"SH\" are frames, \"ST\" a token; base64url text is a token; anything else a record unless --as says otherwise. Malformed input exits with status 3 and says where and what was expected."
    )
    @Argument(help: "A file, or - for standard input.") var file: String
    @Option(name: .long, help: "What the bytes are: auto, frames, record, delta, tombstone, token.") var `as` = "auto"
    @Option(name: .long, help: "The zone a delta belongs to (name or name@owner).") var zone = "notes"
    @Option(
        name: .long, help: "Print only this field of a record, read in place (RecordView) without decoding the rest.")
    var field: String? = nil
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        try await reportFailures {
            let bytes: [UInt8]
            if file == "-" {
                bytes = [UInt8](FileHandle.standardInput.readDataToEndOfFile())
            } else {
                guard let d = FileManager.default.contents(atPath: file) else {
                    throw CommandFailure(.notFound, "cannot read \(file)")
                }
                bytes = [UInt8](d)
            }
            var (kind, input) = (self.as, bytes)
            if kind == "auto" { (kind, input) = Inspection.detect(bytes) }
            do {
                if let field {
                    guard kind == "record" else {
                        throw CommandFailure(.usage, "--field reads a record; these bytes are a \(kind)")
                    }
                    try printField(field, of: input)
                    return
                }
                let out: Any = try Inspection.decode(kind, input, zone: parseZone(zone))
                if json { Console.current.line(RecordFormatting.jsonText(out)) } else { describe(out, indent: "") }
            } catch let e as WireError {
                throw CommandFailure(.badInput, "not a valid \(kind): \(e.code) at byte \(e.offset): \(e.detail)")
            } catch let e as Inspection.UnknownKind {
                throw CommandFailure(.usage, e.description)
            }
        }
    }

    /// Prints one field of a record, found by ``RecordView`` (validated, not decoded): its value
    /// as `shoal inspect --json` shows values, or as text.
    func printField(_ name: String, of bytes: [UInt8]) throws {
        let value: FieldValue?? = try RecordView.withView(of: bytes) { view in view.field(named: name).map(\.value) }
        guard let slot = value else { throw CommandFailure(.notFound, "the record has no field \(name)") }
        guard let v = slot else {
            Console.current.line(json ? "null" : "(removed)")
            return
        }
        Console.current.line(
            json ? RecordFormatting.jsonText(Inspection.value(v, assets: .summary)) : RecordFormatting.text(v))
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
