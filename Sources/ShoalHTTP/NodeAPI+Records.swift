// NodeAPI+Records: records — get, put (with a save policy and change tag), delete, query with cursor paging.

import Foundation
import Hummingbird
import Shoal

extension NodeAPI {
    /// The most records a query page holds through the API.
    static let maxPageSize = 1_000

    /// `GET /api/v1/zones/{zone}/records/{name}[?keys=a,b]`: one record, as `shoal get --json`.
    func record(_ zone: String, _ name: String, _ r: APIRequest) async throws -> Response {
        let id = Record.ID(name: name, zone: try zoneID(zone))
        let record = try await node.record(for: id, desiredKeys: keys(r))
        return APIResponse.json(RecordJSON.object(record))
    }

    /// `PUT /api/v1/zones/{zone}/records/{name}` `{"type", "fields", "policy", "changeTag"}`:
    /// saves a record, as `shoal put`. `policy` is `changedKeys` (the default: write the fields
    /// given, keep the others), `allKeys` (the record becomes the fields given) or `ifUnchanged`
    /// (as changedKeys, only if the stored record's change tag is `changeTag`, or, without one,
    /// only if the record does not exist yet). A field whose value is null is removed.
    /// An unknown zone is a 404 before the body is read.
    func put(_ zone: String, _ name: String, _ r: APIRequest) async throws -> Response {
        let z = try await existingZone(zone)
        let body = try await r.json().object("the body")
        let type = try body["type"].string("type")
        let tag = try body["changeTag"].string("changeTag")
        let policy = try body["policy"].string("policy") ?? "changedKeys"
        guard ["changedKeys", "allKeys", "ifUnchanged"].contains(policy) else {
            throw APIError.invalid(
                "policy \(policy.prefix(40).debugDescription) is not one of changedKeys, allKeys, ifUnchanged")
        }
        if tag != nil && policy != "ifUnchanged" {
            throw APIError.invalid("changeTag goes with \"policy\": \"ifUnchanged\"")
        }
        var fields = [(String, FieldValue?)]()
        if let given = body["fields"] {
            for (k, v) in try given.object("fields").sorted(by: { $0.key < $1.key }) {
                fields.append((k, try RecordJSON.value(v, field: k, zone: z)))
            }
        }
        let id = Record.ID(name: name, zone: z)
        var record: Record
        do {
            record = try await node.record(for: id)
            if let type, type != record.recordType {
                throw APIError.invalid("record \(name.prefix(80)) is a \(record.recordType), not a \(type.prefix(80))")
            }
        } catch let e as ShoalError where e.code == .unknownItem {
            guard let type else {
                throw APIError.invalid("record \(name.prefix(80)) is new: give its type ({\"type\": \"Note\", …})")
            }
            record = Record(recordType: type, id: id)
        }
        if policy == "ifUnchanged", record.changeTag != tag {
            var e = APIError(
                .conflict, ShoalError.Code.serverRecordChanged.name,
                record.changeTag.map {
                    "record \(name.prefix(80)) has change tag \($0), not \(tag ?? "none"): it changed since it was read; read it again and retry with its tag"
                }
                    ?? "record \(name.prefix(80)) does not exist, so it cannot have change tag \(tag ?? "-"); leave changeTag out to create it"
            )
            if record.changeTag != nil { e.details["serverRecord"] = RecordJSON.object(record) }
            throw e
        }
        if policy == "allKeys" {
            let given = Set(fields.map(\.0))
            for k in record.allKeys where !given.contains(k) { record[k] = nil }
        }
        for (k, v) in fields { record[k] = v }
        let saved = try await node.save(
            record,
            policy: policy == "allKeys" ? .allKeys : policy == "ifUnchanged" ? .ifServerRecordUnchanged : .changedKeys)
        return APIResponse.json(RecordJSON.object(saved))
    }

    /// `DELETE /api/v1/zones/{zone}/records/{name}`.
    func delete(_ zone: String, _ name: String) async throws -> Response {
        let id = Record.ID(name: name, zone: try zoneID(zone))
        try await node.delete(id)
        return APIResponse.json(["deleted": name, "zone": id.zone.description])
    }

    /// `GET /api/v1/zones/{zone}/records?type=T[&where=COND][&sort=-modified][&limit=100][&keys=a,b]`,
    /// then `?cursor=C` for the next page: `{"records": [...], "cursor": C or null}`, as
    /// `shoal query --json`. `where` is a condition in `shoal query --where`'s grammar
    /// (``WhereParser``); the cursor carries the type, the condition and the order. An unknown
    /// zone is a 404 before the parameters are read.
    func query(_ zone: String, _ r: APIRequest) async throws -> Response {
        let z = try await existingZone(zone)
        let limit = try r.integer("limit", in: 1...Self.maxPageSize, default: 100)
        let page: QueryResult
        if let text = r.query("cursor") {
            guard r.query("type") == nil, r.query("where") == nil, r.query("sort") == nil else {
                throw APIError.invalid("a cursor carries the query: leave out type, where and sort")
            }
            guard let bytes = Base64URL.decode(text), bytes.count <= QueryCursor.maxEncodedBytes else {
                throw APIError.invalid(
                    "cursor is not a cursor (base64url text); pass the one the previous page returned")
            }
            let cursor = try QueryCursor(decoding: bytes)
            guard cursor.zone == z else { throw APIError.invalid("the cursor pages zone \(cursor.zone), not \(z)") }
            page = try await node.records(continuing: cursor, desiredKeys: keys(r), resultsLimit: limit)
        } else {
            guard let type = r.query("type"), !type.isEmpty else {
                throw APIError.invalid("give the record type: ?type=Note (or the cursor of a previous page: ?cursor=…)")
            }
            var query = Query(recordType: type)
            if let condition = r.query("where") { query.predicate = try Self.predicate(condition, zone: z) }
            if let sort = r.query("sort"), !sort.isEmpty {
                let descending = sort.hasPrefix("-")
                let key = descending ? String(sort.dropFirst()) : sort
                let sortKey: Query.SortKey =
                    key == "modified" ? .modificationDate : key == "created" ? .creationDate : .field(key)
                query.sortDescriptors = [Query.SortDescriptor(sortKey, ascending: !descending)]
            }
            page = try await node.records(matching: query, in: z, desiredKeys: keys(r), resultsLimit: limit)
        }
        return APIResponse.json(
            [
                "records": page.records.map(RecordJSON.object),
                "cursor": page.cursor.map { Base64URL.encode($0.encoded()) } ?? NSNull()
            ] as [String: Any])
    }

    /// The predicate of a `where` parameter.
    /// - Throws: ``APIError`` 400 naming the condition, the column and what was expected there
    ///   (the members `where` and `column` repeat them).
    static func predicate(_ condition: String, zone: RecordZone.ID) throws(APIError) -> ShoalStore.Predicate {
        do {
            return try WhereParser.parse(condition, zone: zone, label: "where")
        } catch let failure as WhereParser.Failure {
            var e = APIError.invalid(failure.description)
            e.details["where"] = failure.condition
            e.details["column"] = failure.column
            throw e
        } catch {
            throw APIError.invalid("where: \(error)")
        }
    }

    /// The `keys` query parameter: the fields wanted, comma-separated; nil for all.
    func keys(_ r: APIRequest) -> [String]? {
        guard let text = r.query("keys"), !text.isEmpty else { return nil }
        return text.split(separator: ",").map(String.init)
    }
}
