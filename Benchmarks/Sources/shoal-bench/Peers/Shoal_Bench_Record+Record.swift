// Shoal_Bench_Record+Record: converts a ShoalWire record to the protobuf model of Proto/notes.proto.

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
import ShoalWire

extension Shoal_Bench_Record {
    /// The same information as `record`, field for field.
    init(_ record: Record) {
        self.init()
        recordType = record.recordType
        name = record.id.name
        zone = Shoal_Bench_ZoneID(record.id.zone)
        let vv = record.versionVector
        versionVector = vv.entries.map { e in
            var v = Shoal_Bench_VectorEntry()
            v.nodeHigh = e.node.high
            v.nodeLow = e.node.low
            v.hlc = e.hlc.rawValue
            if let h = record.heads.first(where: { $0.node == e.node }) {
                v.head = h.isDeletion ? .delete : .save
            }
            return v
        }
        if let c = record.creation { creation = Shoal_Bench_Stamp(c, in: vv) }
        if let p = record.parent { parent = Shoal_Bench_Reference(p, in: record.id.zone) }
        fields = record.fields.map { f in
            var out = Shoal_Bench_Field()
            out.name = f.name
            if let s = f.stamp { out.stamp = Shoal_Bench_Stamp(s, in: vv) }
            out.value = f.value.map { Shoal_Bench_Field.OneOf_Value($0, in: record.id.zone) }
            return out
        }
        extensions = record.extensions.map { e in
            var out = Shoal_Bench_Extension()
            out.tag = e.tag
            out.bytes = Data(e.bytes)
            return out
        }
    }
}

extension Shoal_Bench_ZoneID {
    init(_ zone: RecordZone.ID) {
        self.init()
        name = zone.name
        owner = zone.owner
    }
}

extension Shoal_Bench_Stamp {
    /// The stamp as ShoalWire writes it: node index in `vv`, distance below that node's entry.
    init(_ dot: Dot, in vv: VersionVector) {
        self.init()
        if let i = vv.index(of: dot.node) {
            nodeIndex = UInt32(i)
            hlcOffset = vv.entries[i].hlc.rawValue &- dot.hlc.rawValue
        }
    }
}

extension Shoal_Bench_Reference {
    init(_ r: Reference, in zone: RecordZone.ID) {
        self.init()
        recordName = r.recordID.name
        if r.recordID.zone != zone { self.zone = Shoal_Bench_ZoneID(r.recordID.zone) }
        action = r.action == .deleteSelf ? .deleteSelf : .none
    }
}

extension Shoal_Bench_Asset {
    init(_ a: Asset) {
        self.init()
        sha256 = Data(a.hash.bytes)
        size = a.size
    }
}

extension Shoal_Bench_Location {
    init(_ l: Location) {
        self.init()
        latitude = l.latitude
        longitude = l.longitude
        if let v = l.altitude { altitude = v }
        if let v = l.horizontalAccuracy { horizontalAccuracy = v }
        if let v = l.verticalAccuracy { verticalAccuracy = v }
        if let v = l.course { course = v }
        if let v = l.speed { speed = v }
        if let t = l.timestamp { timestampMs = t.millisecondsSince1970 }
    }
}

extension Shoal_Bench_Field.OneOf_Value {
    init(_ value: FieldValue, in zone: RecordZone.ID) {
        switch value {
        case .string(let v): self = .stringValue(v)
        case .int64(let v): self = .int64Value(v)
        case .double(let v): self = .doubleValue(v)
        case .bool(let v): self = .boolValue(v)
        case .bytes(let v): self = .bytesValue(Data(v))
        case .date(let t): self = .dateMs(t.millisecondsSince1970)
        case .reference(let r): self = .referenceValue(Shoal_Bench_Reference(r, in: zone))
        case .asset(let a): self = .assetValue(Shoal_Bench_Asset(a))
        case .location(let l): self = .locationValue(Shoal_Bench_Location(l))
        case .list(let list):
            switch list {
            case .string(let v): var m = Shoal_Bench_StringList(); m.values = v; self = .stringList(m)
            case .int64(let v): var m = Shoal_Bench_Int64List(); m.values = v; self = .int64List(m)
            case .double(let v): var m = Shoal_Bench_DoubleList(); m.values = v; self = .doubleList(m)
            case .bool(let v): var m = Shoal_Bench_BoolList(); m.values = v; self = .boolList(m)
            case .bytes(let v): var m = Shoal_Bench_BytesList(); m.values = v.map { Data($0) }; self = .bytesList(m)
            case .date(let v):
                var m = Shoal_Bench_DateList(); m.valuesMs = v.map(\.millisecondsSince1970); self = .dateList(m)
            case .reference(let v):
                var m = Shoal_Bench_ReferenceList(); m.values = v.map { Shoal_Bench_Reference($0, in: zone) };
                self = .referenceList(m)
            case .asset(let v):
                var m = Shoal_Bench_AssetList(); m.values = v.map(Shoal_Bench_Asset.init); self = .assetList(m)
            case .location(let v):
                var m = Shoal_Bench_LocationList(); m.values = v.map(Shoal_Bench_Location.init); self = .locationList(m)
            }
        }
    }
}
