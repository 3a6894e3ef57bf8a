// Record+ChangedKeys: which keys differ between versions, and CloudKit's changedKeys save policy.

public import ShoalWire

extension RecordDelta {
    /// The names of the fields the delta sets, removes, drops or edits, in sorted order.
    public var changedKeys: [String] {
        var out = [String]()
        for op in operations where out.last.map({ !NameOrder.equal($0, op.fieldName) }) ?? true {
            out.append(op.fieldName)
        }
        return out
    }
}

extension Record {
    /// The names of the fields whose value differs from `base`'s, in sorted order.
    ///
    /// Only values count: a field that is absent on one side and a removed-field marker on the
    /// other does not differ, and neither does a field re-stamped with the same value.
    public func changedKeys(since base: Record) -> [String] {
        var out = [String]()
        // A field's value is the first of its slots.
        var walk = SlotWalk(base.withoutConcurrentSlots.fields, withoutConcurrentSlots.fields)
        while let (name, a, b, _) = walk.next() {
            if a?.value != b?.value { out.append(name) }
        }
        return out
    }

    /// This (server) record with the unsaved edits of `client` — the fields in its
    /// ``ShoalWire/Record/changedKeys`` — applied on top, as CloudKit's `.changedKeys` save
    /// policy does. Fields the client did not touch keep the server's values and stamps; the
    /// edited ones are unsaved edits again (stamp nil), to be stamped when saved.
    public func applyingChangedKeys(of client: Record) -> Record {
        var out = self
        for f in client.fields where f.stamp == nil {
            out[f.name] = f.value
        }
        return out
    }
}
