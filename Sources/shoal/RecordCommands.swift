// RecordCommands: `shoal zone`, `put`, `get`, `delete` and `query`.

import ArgumentParser
import Foundation
import Shoal

/// A zone argument: `name` or `name@owner`.
func parseZone(_ text: String) -> RecordZone.ID {
    if let at = text.lastIndex(of: "@"), at != text.startIndex {
        return RecordZone.ID(name: String(text[..<at]), owner: String(text[text.index(after: at)...]))
    }
    return RecordZone.ID(name: text)
}

struct ZoneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zone", abstract: "Create, list, delete or share zones.",
        subcommands: [Create.self, List.self, Delete.self, Share.self, Unshare.self, Members.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a zone this device owns (peers learn of it once it is shared with them).")
        @OptionGroup var options: NodeOptions
        @Argument(help: "The zone: name or name@owner.") var zone: String
        func run() async throws {
            try await reportFailures {
                try await options.withNode { node in
                    let z = try await node.createZone(parseZone(zone))
                    Console.current.line(
                        options.json
                            ? RecordFormatting.jsonText(["zone": z.id.description, "incarnation": z.incarnation.hex])
                            : "created zone \(z.id)")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the live zones, with this device's role in each (owner, read-write, read-only, open).")
        @OptionGroup var options: NodeOptions
        func run() async throws {
            try await reportFailures {
                try await options.withNode { node in
                    let zones = await node.zones()
                    // This device's part in each zone: owner, a member's role, or open (no share).
                    var parts = [(role: String, owner: String)]()
                    for z in zones {
                        let m = try await node.members(of: z.id)
                        let role =
                            m.owner == nil
                            ? "open" : m.owner == node.deviceID ? "owner" : m.role.map { "\($0)" } ?? "not a member"
                        parts.append((role, m.owner?.description ?? ""))
                    }
                    if options.json {
                        Console.current.line(
                            RecordFormatting.jsonText(
                                zip(zones, parts).map {
                                    [
                                        "zone": $0.id.description, "scope": "\($0.scope)",
                                        "incarnation": $0.incarnation.hex, "role": $1.role, "owner": $1.owner
                                    ]
                                }))
                    } else {
                        for l in RecordFormatting.table(
                            ["ZONE", "SCOPE", "INCARNATION", "ROLE", "OWNER"],
                            zip(zones, parts).map {
                                [
                                    $0.id.description, "\($0.scope)", $0.incarnation.short, $1.role,
                                    $1.owner.isEmpty ? "-" : String($1.owner.prefix(7))
                                ]
                            })
                        {
                            Console.current.line(l)
                        }
                    }
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a zone and all its records: here, and on its members when this device owns it.")
        @OptionGroup var options: NodeOptions
        @Argument(help: "The zone: name or name@owner.") var zone: String
        func run() async throws {
            try await reportFailures {
                try await options.withNode { node in
                    try await node.deleteZone(parseZone(zone))
                    Console.current.line(
                        options.json ? RecordFormatting.jsonText(["deleted": zone]) : "deleted zone \(zone)")
                }
            }
        }
    }
}

extension ZoneCommand {
    struct Share: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Share a zone this device owns with a device, read-only or read-write.",
            discussion:
                "The device must also be trusted (`shoal peer add`). Its connections restart at once; it learns of the zone and, read-write, may change it."
        )
        @OptionGroup var options: NodeOptions
        @Argument(help: "The zone: name or name@owner.") var zone: String
        @Argument(help: "The device ID that `shoal id` prints on the other machine.") var device: String
        @Flag(name: .customLong("read-only"), help: "The device receives the zone; its changes are refused.")
        var readOnly = false
        @Flag(name: .customLong("read-write"), help: "The device receives the zone and may change it.") var readWrite =
            false
        func run() async throws {
            try await reportFailures {
                guard readOnly != readWrite else {
                    throw CommandFailure(.usage, "say --read-only or --read-write (one of them)")
                }
                let d = try PeerCommand.device(device)
                let role: ZoneShare.Role = readOnly ? .readOnly : .readWrite
                try await options.withNode { node in
                    try await node.shareZone(parseZone(zone), with: d, role: role)
                    Console.current.line(
                        options.json
                            ? RecordFormatting.jsonText(["zone": zone, "device": d.description, "role": "\(role)"])
                            : "shared zone \(zone) with \(d) (\(role))")
                }
            }
        }
    }

    struct Unshare: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop sharing a zone this device owns with a device.",
            discussion:
                "Its connections restart at once; it is served nothing more of the zone and its changes are refused. What it received stays on it."
        )
        @OptionGroup var options: NodeOptions
        @Argument(help: "The zone: name or name@owner.") var zone: String
        @Argument(help: "The device ID.") var device: String
        func run() async throws {
            try await reportFailures {
                let d = try PeerCommand.device(device)
                try await options.withNode { node in
                    try await node.unshareZone(parseZone(zone), from: d)
                    Console.current.line(
                        options.json
                            ? RecordFormatting.jsonText(["zone": zone, "device": d.description, "role": "none"])
                            : "stopped sharing zone \(zone) with \(d)")
                }
            }
        }
    }

    struct Members: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a zone's owner and the devices it is shared with.")
        @OptionGroup var options: NodeOptions
        @Argument(help: "The zone: name or name@owner.") var zone: String
        func run() async throws {
            try await reportFailures {
                try await options.withNode { node in
                    let m = try await node.members(of: parseZone(zone))
                    let me = node.deviceID
                    if options.json {
                        Console.current.line(
                            RecordFormatting.jsonText(
                                [
                                    "zone": m.zone.description, "owner": m.owner?.description ?? "",
                                    "serial": "\(m.serial)",
                                    "members": m.members.map { "\($0.device) \($0.role)" }
                                ] as [String: Any]))
                    } else if let owner = m.owner {
                        var rows = [[owner.description, "owner" + (owner == me ? " (this device)" : "")]]
                        rows += m.members.map {
                            [$0.device.description, "\($0.role)" + ($0.device == me ? " (this device)" : "")]
                        }
                        for l in RecordFormatting.table(["DEVICE", "ROLE"], rows) { Console.current.line(l) }
                    } else {
                        Console.current.line(
                            "zone \(m.zone) has no owner: every trusted device reads and writes it (share it to make it this device's)"
                        )
                    }
                }
            }
        }
    }
}

struct PutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put", abstract: "Save a record: shoal put ZONE NAME --type T field=value n:=42 …",
        discussion:
            "Values: field=text, field:=42, :=4.5, :=true, :=2026-11-22T10:00:00Z, :=[a,b], :=>other-record, :=@48.85,2.35, :=null (remove); field=@path/to/file stores the file as an asset (field=@@text for a text starting with @)."
    )
    @OptionGroup var options: NodeOptions
    @Argument(help: "The zone: name or name@owner.") var zone: String
    @Argument(help: "The record name.") var name: String
    @Option(name: .long, help: "The record type (needed when the record is new).") var type: String?
    @Option(
        name: .long,
        help:
            "How the save treats the stored record: changed-keys (write the fields given, keep the others), all-keys (the record becomes the fields given; stored fields not given are removed) or if-unchanged (as changed-keys, only if the stored record's change tag is --if-tag, or, without --if-tag, only if the record does not exist yet)."
    )
    var policy: SavePolicyArgument = .changedKeys
    @Option(
        name: .customLong("if-tag"),
        help:
            "With --policy if-unchanged: the change tag the stored record must have (from `shoal get`); no tag for a record that must not exist yet."
    )
    var ifTag: String?
    @Argument(help: "Fields: field=value or field:=typed-value.") var fields: [String] = []

    func validate() throws {
        if ifTag != nil && policy != .ifUnchanged {
            throw ValidationError("--if-tag goes with --policy if-unchanged")
        }
    }

    func run() async throws {
        try await reportFailures {
            let z = parseZone(zone)
            var parsed = [(String, FieldValue?)]()
            var files = [String: String]()
            for f in fields {
                if let (field, path) = ValueParsing.file(f) {
                    guard FileManager.default.isReadableFile(atPath: path) else {
                        throw CommandFailure(
                            .badInput,
                            "\(path) (for field \(field)) is not a readable file; give the path of the file to store as an asset"
                        )
                    }
                    files[field] = path
                    continue
                }
                do { parsed.append(try ValueParsing.field(f, zone: z)) } catch {
                    throw CommandFailure(.badInput, "\(error)")
                }
            }
            try await options.withNode { node in
                let id = Record.ID(name: name, zone: z)
                var record: Record
                if let existing = try? await node.record(for: id) {
                    record = existing
                    if let type, type != existing.recordType {
                        throw CommandFailure(.badInput, "record \(name) is a \(existing.recordType), not a \(type)")
                    }
                } else {
                    guard let type else {
                        throw CommandFailure(
                            .badInput, "record \(name) is new: give its type with --type (e.g. --type Note)")
                    }
                    record = Record(recordType: type, id: id)
                }
                let stored = record.changeTag
                if policy == .ifUnchanged, stored != ifTag {
                    throw CommandFailure(
                        .conflict,
                        stored.map {
                            "record \(name) has change tag \($0), not \(ifTag ?? "none"): it changed since it was read; read it again (shoal get) and retry with its tag"
                        }
                            ?? "record \(name) does not exist, so it cannot have change tag \(ifTag ?? "-"); leave --if-tag out to create it"
                    )
                }
                if policy == .allKeys {
                    let given = Set(parsed.map(\.0)).union(files.keys)
                    for k in record.allKeys where !given.contains(k) { record[k] = nil }
                }
                for (k, v) in parsed { record[k] = v }
                let saved: Record
                if files.isEmpty {
                    saved = try await node.save(record, policy: policy.savePolicy)
                } else {
                    do {
                        saved = try await node.save(record, attaching: files, policy: policy.savePolicy)
                    } catch let e as ShoalError
                        where [.assetFileNotFound, .assetFileModified, .limitExceeded, .quotaExceeded].contains(e.code)
                    {
                        throw CommandFailure(
                            e.code == .assetFileNotFound ? .notFound : e.code == .limitExceeded ? .conflict : .failure,
                            "\(e)")
                    }
                }
                if options.json {
                    Console.current.line(RecordFormatting.jsonText(RecordFormatting.json(saved)))
                } else {
                    Console.current.line(
                        "saved \(saved.recordType) \(saved.id.name) in \(z) (tag \(saved.changeTag ?? "-"))")
                }
            }
        }
    }
}

/// `put --policy`: CloudKit's save policies by their command-line names.
enum SavePolicyArgument: String, ExpressibleByArgument, CaseIterable, Sendable {
    case changedKeys = "changed-keys"
    case allKeys = "all-keys"
    case ifUnchanged = "if-unchanged"

    var savePolicy: SavePolicy {
        switch self {
        case .changedKeys: .changedKeys
        case .allKeys: .allKeys
        case .ifUnchanged: .ifServerRecordUnchanged
        }
    }
}

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Show a record.")
    @OptionGroup var options: NodeOptions
    @Argument(help: "The zone: name or name@owner.") var zone: String
    @Argument(help: "The record name.") var name: String
    @Option(name: .long, parsing: .upToNextOption, help: "Only these fields.") var keys: [String] = []

    func run() async throws {
        try await reportFailures {
            try await options.withNode { node in
                let r = try await node.record(
                    for: Record.ID(name: name, zone: parseZone(zone)), desiredKeys: keys.isEmpty ? nil : keys)
                if options.json {
                    Console.current.line(RecordFormatting.jsonText(RecordFormatting.json(r)))
                } else {
                    for l in RecordFormatting.lines(r) { Console.current.line(l) }
                }
            }
        }
    }
}

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a record (the deletion replicates).")
    @OptionGroup var options: NodeOptions
    @Argument(help: "The zone: name or name@owner.") var zone: String
    @Argument(help: "The record name.") var name: String

    func run() async throws {
        try await reportFailures {
            try await options.withNode { node in
                try await node.delete(Record.ID(name: name, zone: parseZone(zone)))
                Console.current.line(options.json ? RecordFormatting.jsonText(["deleted": name]) : "deleted \(name)")
            }
        }
    }
}

struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Find records: shoal query ZONE --type T --where 'n > 3' --sort -modified --limit 20",
        discussion:
            "A page ends with the cursor of the next one when there is more: pass it with --cursor (the zone, type, conditions and order come with it), or give --all to print every page. With --json the output is {\"records\": [...], \"cursor\": \"...\" or null}."
    )
    @OptionGroup var options: NodeOptions
    @Argument(help: "The zone: name or name@owner.") var zone: String
    @Option(name: .long, help: "The record type (not with --cursor).") var type: String?
    @Option(
        name: .long,
        help:
            "Conditions: 'field OP value' joined by AND, OR and NOT, with parentheses; OP one of == != < <= > >= BEGINSWITH CONTAINS; quote text values that hold operators or keywords ('title == \"a AND b\"')."
    ) var `where`: String?
    // Unconditional: the value of a descending sort starts with "-" (`--sort -modified`), which
    // the parser would otherwise take for an option.
    @Option(
        name: .long, parsing: .unconditional,
        help: "Sort by a field (prefix - for descending; 'modified' and 'created' are the system dates).") var sort:
        String?
    @Option(name: .long, help: "At most this many records per page (1…\(Store.maxResultsLimit)).") var limit = 100
    @Option(name: .long, help: "Go on from where the page that printed this cursor ended.") var cursor: String?
    @Flag(name: .long, help: "Print every page, not only the first.") var all = false
    @Option(name: .long, parsing: .upToNextOption, help: "Only these fields of each record.") var keys: [String] = []

    func validate() throws {
        if cursor != nil, type != nil || `where` != nil || sort != nil {
            throw ValidationError("--cursor carries the query: leave out --type, --where and --sort")
        }
        if cursor == nil, type == nil {
            throw ValidationError("give the record type with --type (or a --cursor from an earlier page)")
        }
        guard (1...Store.maxResultsLimit).contains(limit) else {
            throw ValidationError("--limit \(limit) must be 1…\(Store.maxResultsLimit)")
        }
    }

    func run() async throws {
        try await reportFailures {
            let z = parseZone(zone)
            var start: QueryCursor? = nil
            var query = Query(recordType: type ?? "")
            if let cursor {
                guard let bytes = Base64URL.decode(cursor) else {
                    throw CommandFailure(
                        .badInput, "--cursor is not a cursor (base64url text); pass the one a query printed")
                }
                start = try QueryCursor(decoding: bytes)
                guard start?.zone == z else {
                    throw CommandFailure(
                        .badInput, "the cursor pages zone \(start.map { "\($0.zone)" } ?? "-"), not \(z)")
                }
            } else {
                do {
                    query.predicate = try `where`.map { try ValueParsing.predicate($0, zone: z) } ?? .all
                } catch { throw CommandFailure(.badInput, "\(error)") }
                if let sort {
                    let descending = sort.hasPrefix("-")
                    let key = descending ? String(sort.dropFirst()) : sort
                    let sortKey: Query.SortKey =
                        key == "modified" ? .modificationDate : key == "created" ? .creationDate : .field(key)
                    query.sortDescriptors = [Query.SortDescriptor(sortKey, ascending: !descending)]
                }
            }
            let desired = keys.isEmpty ? nil : keys
            try await options.withNode { node in
                var records = [Record]()
                var next = start
                var page =
                    start == nil
                    ? try await node.records(matching: query, in: z, desiredKeys: desired, resultsLimit: limit)
                    : nil
                repeat {
                    if page == nil, let c = next {
                        page = try await node.records(continuing: c, desiredKeys: desired, resultsLimit: limit)
                    }
                    guard let p = page else { break }
                    records += p.records
                    next = p.cursor
                    page = nil
                } while all && next != nil
                let more = next.map { Base64URL.encode($0.encoded()) }
                if options.json {
                    Console.current.line(
                        RecordFormatting.jsonText(
                            ["records": records.map(RecordFormatting.json), "cursor": more ?? NSNull()] as [String: Any]
                        ))
                } else {
                    let names = Array(Set(records.flatMap(\.allKeys))).sorted()
                    let rows = records.map { r in [r.id.name] + names.map { k in r[k].map(RecordFormatting.text) ?? "" }
                    }
                    for l in RecordFormatting.table(["NAME"] + names.map { $0.uppercased() }, rows) {
                        Console.current.line(l)
                    }
                    let count = "\(records.count) record\(records.count == 1 ? "" : "s")"
                    Console.current.line(more.map { "(\(count); next page: --cursor \($0))" } ?? "(\(count))")
                }
            }
        }
    }
}

struct IndexCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index", abstract: "Declare indexes that make queries read only the records they match.",
        subcommands: [Declare.self])

    struct Declare: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "declare", abstract: "Index a field: shoal index declare ZONE TYPE FIELD",
            discussion:
                "Queries whose conditions constrain the field with ==, IN, CONTAINS, BEGINSWITH or a range then read only the records the index names. The index is built at once and kept up to date; it is this node's own and does not replicate. Declaring an index that exists does nothing."
        )
        @OptionGroup var options: NodeOptions
        @Argument(help: "The zone: name or name@owner.") var zone: String
        @Argument(help: "The record type.") var type: String
        @Argument(help: "The field.") var field: String

        func run() async throws {
            try await reportFailures {
                let z = parseZone(zone)
                try await options.withNode { node in
                    try await node.declareIndex(zone: z, recordType: type, field: field)
                    Console.current.line(
                        options.json
                            ? RecordFormatting.jsonText(["zone": "\(z)", "type": type, "field": field, "indexed": true])
                            : "indexed \(type).\(field) in \(z)")
                }
            }
        }
    }
}
