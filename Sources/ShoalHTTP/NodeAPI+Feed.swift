// NodeAPI+Feed: a zone's changes since a token (long poll), the event stream, and the conflicts met.

import Foundation
import Hummingbird
import Shoal

extension NodeAPI {
    /// `GET /api/v1/zones/{zone}/changes[?since=TOKEN][&limit=1000][&wait=30]`: what changed
    /// since the token, as `shoal changes --json` — `changed`, `deleted`, `moreComing`,
    /// `token`. With `wait` (seconds, at most the configured maximum) and nothing new, the
    /// request is held until something changes in the zone or the time is up.
    func changes(_ zone: String, _ r: APIRequest) async throws -> Response {
        let z = try zoneID(zone)
        var token: ChangeToken? = nil
        if let since = r.query("since"), !since.isEmpty {
            guard let t = ChangeToken(text: since) else {
                throw APIError.invalid(
                    "since=\(since.prefix(40)) is not a change token; pass the token a previous answer returned, or leave since out for everything"
                )
            }
            token = t
        }
        let limit = try r.integer("limit", in: 1...10_000, default: 1_000)
        let wait = try r.integer("wait", in: 0...configuration.maxWaitSeconds, default: 0)
        // Listen before reading, so a change committed between the read and the wait is heard.
        var listener: (id: UInt64, events: AsyncStream<ChangeHub.Event>)? = nil
        if wait > 0 { listener = try await hub.listen() }
        defer { if let listener { Task { [hub] in await hub.stopListening(listener.id) } } }
        var c = try await node.changes(in: z, since: token, limit: limit)
        if c.records.isEmpty, let listener {
            if await ChangeHub.wait(for: z, in: listener.events, seconds: wait) {
                c = try await node.changes(in: z, since: token, limit: limit)
            }
        }
        return APIResponse.json([
            "changed": c.modifiedRecords.map(RecordJSON.object),
            "deleted": c.deletions.map { ["name": $0.id.name, "type": $0.recordType] },
            "moreComing": c.moreComing, "token": c.token.description
        ])
    }

    /// `GET /api/v1/events`: server-sent events — `change` `{"zones": [...]}` when records
    /// change, `conflict` `{…}` when a conflict is met, and a comment every 15 s. The console
    /// reads it with `fetch`, which can send the key (an `EventSource` cannot).
    func events() async throws -> Response {
        let listener = try await hub.listen()
        let hub = hub
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        let body = ResponseBody { writer in
            defer { Task { await hub.stopListening(listener.id) } }
            try await writer.write(ByteBuffer(string: ": shoal events\n\n"))
            let (ticks, tick) = AsyncStream<ChangeHub.Event?>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let keepAlive = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(15))
                    tick.yield(nil)
                }
            }
            let forward = Task {
                for await e in listener.events { tick.yield(e) }
                tick.finish()
            }
            defer { keepAlive.cancel(); forward.cancel() }
            for await e in ticks {
                switch e {
                case nil: try await writer.write(ByteBuffer(string: ": still here\n\n"))
                case .changed(let zones)?:
                    try await writer.write(Self.event("change", ["zones": zones.map(\.description).sorted()]))
                case .conflict(let c)?:
                    try await writer.write(Self.event("conflict", Self.conflictObject(c, date: Date())))
                }
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// One server-sent event.
    static func event(_ name: String, _ object: Any) -> ByteBuffer {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return ByteBuffer(string: "event: \(name)\ndata: \(String(decoding: data, as: UTF8.self))\n\n")
    }

    /// `GET /api/v1/conflicts`: the last conflicts met since the daemon started, newest first.
    func conflictList() async -> Response {
        APIResponse.json([
            "conflicts": await conflicts.all().reversed().map { Self.conflictObject($0.event, date: $0.date) }
        ])
    }

    /// A conflict as JSON: the record, the fields, each side's values and the outcome.
    static func conflictObject(_ e: ConflictEvent, date: Date) -> [String: Any] {
        let c = e.conflict
        let outcome: [String: Any]
        switch e.outcome {
        case .resolved: outcome = ["kind": "resolved"]
        case .decidedBy(let node): outcome = ["kind": "decidedBy", "node": node.hex]
        case .merged: outcome = ["kind": "merged"]
        case .rejected(let reason): outcome = ["kind": "rejected", "reason": reason]
        }
        func values(_ r: Record) -> [String: Any] {
            var o = [String: Any]()
            for f in c.fieldNames { o[f] = r[f].map(RecordJSON.value) ?? NSNull() }
            return o
        }
        return [
            "zone": c.recordID.zone.description, "record": c.recordID.name, "fields": c.fieldNames,
            "date": DateText.iso(date),
            "local": values(c.local), "remote": values(c.remote), "merged": values(c.merged), "outcome": outcome
        ]
    }
}
