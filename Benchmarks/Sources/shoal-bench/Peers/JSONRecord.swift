// JSONRecord: a Codable mirror of a ShoalWire record, shaped like protobuf's JSON mapping of notes.proto.

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import ShoalWire

/// A record as a Swift app would model it for `JSONEncoder`: synthesized `Codable` everywhere
/// except the field value, a one-key object (`{"string": "…"}`) as protobuf's JSON mapping writes
/// a oneof. Absent optionals are omitted; bytes are base64 (`Data`'s default); dates are
/// milliseconds since 1970; node IDs are two unsigned 64-bit numbers.
struct JSONRecord: Codable, Equatable {
    struct Zone: Codable, Equatable {
        var name: String
        var owner: String
    }

    enum HeadState: String, Codable, Equatable { case save, delete }

    struct VectorEntry: Codable, Equatable {
        var nodeHigh: UInt64
        var nodeLow: UInt64
        var hlc: UInt64
        var head: HeadState?
    }

    struct Stamp: Codable, Equatable {
        var nodeIndex: Int
        var hlcOffset: UInt64
    }

    struct Reference: Codable, Equatable {
        var recordName: String
        var zone: Zone?
        var deleteSelf: Bool?
    }

    struct Asset: Codable, Equatable {
        var sha256: Data
        var size: Int64
    }

    struct Location: Codable, Equatable {
        var latitude: Double
        var longitude: Double
        var altitude: Double?
        var horizontalAccuracy: Double?
        var verticalAccuracy: Double?
        var course: Double?
        var speed: Double?
        var timestampMs: Int64?
    }

    enum Value: Codable, Equatable {
        case string(String)
        case int64(Int64)
        case double(Double)
        case bool(Bool)
        case bytes(Data)
        case dateMs(Int64)
        case reference(Reference)
        case asset(Asset)
        case location(Location)
        case stringList([String])
        case int64List([Int64])
        case doubleList([Double])
        case boolList([Bool])
        case bytesList([Data])
        case dateMsList([Int64])
        case referenceList([Reference])
        case assetList([Asset])
        case locationList([Location])

        enum CodingKeys: String, CodingKey {
            case string, int64, double, bool, bytes, dateMs, reference, asset, location
            case stringList, int64List, doubleList, boolList, bytesList, dateMsList, referenceList, assetList,
                locationList
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .string(let v): try c.encode(v, forKey: .string)
            case .int64(let v): try c.encode(v, forKey: .int64)
            case .double(let v): try c.encode(v, forKey: .double)
            case .bool(let v): try c.encode(v, forKey: .bool)
            case .bytes(let v): try c.encode(v, forKey: .bytes)
            case .dateMs(let v): try c.encode(v, forKey: .dateMs)
            case .reference(let v): try c.encode(v, forKey: .reference)
            case .asset(let v): try c.encode(v, forKey: .asset)
            case .location(let v): try c.encode(v, forKey: .location)
            case .stringList(let v): try c.encode(v, forKey: .stringList)
            case .int64List(let v): try c.encode(v, forKey: .int64List)
            case .doubleList(let v): try c.encode(v, forKey: .doubleList)
            case .boolList(let v): try c.encode(v, forKey: .boolList)
            case .bytesList(let v): try c.encode(v, forKey: .bytesList)
            case .dateMsList(let v): try c.encode(v, forKey: .dateMsList)
            case .referenceList(let v): try c.encode(v, forKey: .referenceList)
            case .assetList(let v): try c.encode(v, forKey: .assetList)
            case .locationList(let v): try c.encode(v, forKey: .locationList)
            }
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            guard c.allKeys.count == 1, let key = c.allKeys.first else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "a value has exactly one key"))
            }
            switch key {
            case .string: self = .string(try c.decode(String.self, forKey: key))
            case .int64: self = .int64(try c.decode(Int64.self, forKey: key))
            case .double: self = .double(try c.decode(Double.self, forKey: key))
            case .bool: self = .bool(try c.decode(Bool.self, forKey: key))
            case .bytes: self = .bytes(try c.decode(Data.self, forKey: key))
            case .dateMs: self = .dateMs(try c.decode(Int64.self, forKey: key))
            case .reference: self = .reference(try c.decode(Reference.self, forKey: key))
            case .asset: self = .asset(try c.decode(Asset.self, forKey: key))
            case .location: self = .location(try c.decode(Location.self, forKey: key))
            case .stringList: self = .stringList(try c.decode([String].self, forKey: key))
            case .int64List: self = .int64List(try c.decode([Int64].self, forKey: key))
            case .doubleList: self = .doubleList(try c.decode([Double].self, forKey: key))
            case .boolList: self = .boolList(try c.decode([Bool].self, forKey: key))
            case .bytesList: self = .bytesList(try c.decode([Data].self, forKey: key))
            case .dateMsList: self = .dateMsList(try c.decode([Int64].self, forKey: key))
            case .referenceList: self = .referenceList(try c.decode([Reference].self, forKey: key))
            case .assetList: self = .assetList(try c.decode([Asset].self, forKey: key))
            case .locationList: self = .locationList(try c.decode([Location].self, forKey: key))
            }
        }
    }

    struct Field: Codable, Equatable {
        var name: String
        var stamp: Stamp?
        var value: Value?
    }

    struct Extension: Codable, Equatable {
        var tag: UInt64
        var bytes: Data
    }

    var recordType: String
    var name: String
    var zone: Zone
    var versionVector: [VectorEntry]
    var creation: Stamp?
    var parent: Reference?
    var fields: [Field]
    var extensions: [Extension]?
}

extension JSONRecord {
    /// The same information as `record`, field for field.
    init(_ record: Record) {
        let vv = record.versionVector
        let zone = record.id.zone
        func stamp(_ d: Dot) -> Stamp {
            guard let i = vv.index(of: d.node) else { return Stamp(nodeIndex: 0, hlcOffset: 0) }
            return Stamp(nodeIndex: i, hlcOffset: vv.entries[i].hlc.rawValue &- d.hlc.rawValue)
        }
        recordType = record.recordType
        name = record.id.name
        self.zone = Zone(zone)
        versionVector = vv.entries.map { e in
            let h = record.heads.first(where: { $0.node == e.node })
            return VectorEntry(
                nodeHigh: e.node.high, nodeLow: e.node.low, hlc: e.hlc.rawValue,
                head: h.map { $0.isDeletion ? .delete : .save })
        }
        creation = record.creation.map(stamp)
        parent = record.parent.map { Reference($0, in: zone) }
        fields = record.fields.map { f in
            Field(name: f.name, stamp: f.stamp.map(stamp), value: f.value.map { Value($0, in: zone) })
        }
        extensions =
            record.extensions.isEmpty ? nil : record.extensions.map { Extension(tag: $0.tag, bytes: Data($0.bytes)) }
    }
}

extension JSONRecord.Zone {
    init(_ z: RecordZone.ID) { self.init(name: z.name, owner: z.owner) }
}

extension JSONRecord.Reference {
    init(_ r: ShoalWire.Reference, in zone: RecordZone.ID) {
        self.init(
            recordName: r.recordID.name, zone: r.recordID.zone == zone ? nil : JSONRecord.Zone(r.recordID.zone),
            deleteSelf: r.action == .deleteSelf ? true : nil)
    }
}

extension JSONRecord.Asset {
    init(_ a: ShoalWire.Asset) { self.init(sha256: Data(a.hash.bytes), size: a.size) }
}

extension JSONRecord.Location {
    init(_ l: ShoalWire.Location) {
        self.init(
            latitude: l.latitude, longitude: l.longitude, altitude: l.altitude,
            horizontalAccuracy: l.horizontalAccuracy,
            verticalAccuracy: l.verticalAccuracy, course: l.course, speed: l.speed,
            timestampMs: l.timestamp?.millisecondsSince1970)
    }
}

extension JSONRecord.Value {
    init(_ value: FieldValue, in zone: RecordZone.ID) {
        switch value {
        case .string(let v): self = .string(v)
        case .int64(let v): self = .int64(v)
        case .double(let v): self = .double(v)
        case .bool(let v): self = .bool(v)
        case .bytes(let v): self = .bytes(Data(v))
        case .date(let t): self = .dateMs(t.millisecondsSince1970)
        case .reference(let r): self = .reference(JSONRecord.Reference(r, in: zone))
        case .asset(let a): self = .asset(JSONRecord.Asset(a))
        case .location(let l): self = .location(JSONRecord.Location(l))
        case .list(let list):
            switch list {
            case .string(let v): self = .stringList(v)
            case .int64(let v): self = .int64List(v)
            case .double(let v): self = .doubleList(v)
            case .bool(let v): self = .boolList(v)
            case .bytes(let v): self = .bytesList(v.map { Data($0) })
            case .date(let v): self = .dateMsList(v.map(\.millisecondsSince1970))
            case .reference(let v): self = .referenceList(v.map { JSONRecord.Reference($0, in: zone) })
            case .asset(let v): self = .assetList(v.map(JSONRecord.Asset.init))
            case .location(let v): self = .locationList(v.map(JSONRecord.Location.init))
            }
        }
    }
}
