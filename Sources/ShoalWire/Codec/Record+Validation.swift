// Record+Validation: what a record must satisfy before it is encoded (Spec/wire-format.md §3.5).

extension Record {
    /// Checks what the encoder cannot: that the record has exactly one faithful encoding which a
    /// conforming decoder accepts under `limits`. The store validates every record it saves.
    ///
    /// Names follow the rules; system fields are consistent (a saved record has a creation stamp
    /// and heads, an unsaved one neither); every stamp names a write the version vector covers,
    /// at a timestamp above zero; heads are sorted, one per node, each with a vector entry; fields
    /// are sorted by name; extension tags are odd and increasing; references have valid names and
    /// assets non-negative sizes; and the encoding fits the limits.
    /// - Throws: ``WireError`` naming the first problem (offset 0: nothing has been encoded yet).
    public func validate(limits: WireLimits = .default) throws(WireError) {
        _ = try validatedSize(limits: limits)
    }

    /// ``validate(limits:)``, returning ``encodedSize``, summed in the same pass over the fields
    /// as the checks (a store validating a client record wants both).
    /// - Throws: ``WireError`` naming the first problem, as ``validate(limits:)``.
    package func validatedSize(limits: WireLimits) throws(WireError) -> Int {
        guard Identifier.isValid(recordType), recordType.utf8.count <= limits.maxNameBytes else {
            throw WireError(
                .invalidName, at: 0,
                "record type \(recordType.debugDescription) must start with an ASCII letter, contain only letters, digits and _, and be at most \(limits.maxNameBytes) bytes"
            )
        }
        try Self.validateNames(id, "record", limits: limits)
        try validateSystemFields()
        guard fields.count <= limits.maxFieldCount else {
            throw WireError(
                .limitExceeded, at: 0,
                "record has \(fields.count) fields, over the limit of \(limits.maxFieldCount) (WireLimits.maxFieldCount)"
            )
        }
        var size = systemFieldsSize
        for i in slots.indices {
            let name = slots[i].name
            guard Identifier.isValid(name), name.utf8.count <= limits.maxFieldNameBytes else {
                throw WireError(
                    .invalidName, at: 0,
                    "field name \(name.debugDescription) must start with an ASCII letter, contain only letters, digits and _, and be at most \(limits.maxFieldNameBytes) bytes"
                )
            }
            if i > 0 {
                let c = UTF8Order.compare(slots[i - 1].name, name)
                if c > 0 {
                    throw WireError(
                        .unsorted, at: 0, "fields must be sorted by name; \(name) follows \(slots[i - 1].name)")
                }
                if c == 0 {
                    try Self.checkConcurrentSlot(name, previous: slots[i - 1].stamp, stamp: slots[i].stamp, at: 0)
                }
            }
            if let s = slots[i].stamp, !isFaithful(s) {
                throw WireError(
                    .invalidValue, at: 0,
                    "field \(name) has stamp \(s) not covered by the version vector (or at timestamp zero)")
            }
            if let v = slots[i].value { try Self.validate(v, in: "field \(name)", limits: limits) }
            size &+= slotSize(slots[i])
        }
        if let p = parent { try Self.validateNames(p.recordID, "parent", limits: limits) }
        try validateExtensions(limits: limits)
        size &+= extensionsSize
        guard size <= limits.maxRecordBytes else {
            throw WireError(
                .limitExceeded, at: 0,
                "record \(id) encodes to \(size) bytes, over the limit of \(limits.maxRecordBytes) (WireLimits.maxRecordBytes); move large values into assets"
            )
        }
        return size
    }

    /// Checks that a slot may follow one of the same name (Spec/wire-format.md §6.3): both are
    /// stamped — concurrent slots a merge kept — and its stamp is the earlier.
    /// - Throws: ``WireError`` `.duplicate` for an unstamped slot or an equal stamp, `.unsorted`
    ///   for a later one, at `at`.
    package static func checkConcurrentSlot(_ name: String, previous: Dot?, stamp: Dot?, at: Int) throws(WireError) {
        guard let previous, let stamp else {
            throw WireError(
                .duplicate, at: at,
                "field \(name) appears twice; only concurrent slots of a merge, each stamped, may repeat a name")
        }
        if previous == stamp {
            throw WireError(
                .duplicate, at: at,
                "field \(name) has two slots stamped \(stamp); concurrent slots have different stamps")
        }
        if previous < stamp {
            throw WireError(
                .unsorted, at: at,
                "concurrent slots of field \(name) must be ordered by stamp, the later first; \(stamp) follows \(previous)"
            )
        }
    }

    /// Whether `dot` can be written as a stamp against the record's vector and read back unchanged.
    func isFaithful(_ dot: Dot) -> Bool {
        !versionVector.isEmpty && dot.hlc != .zero && versionVector.index(of: dot.node) != nil
            && versionVector.covers(dot)
    }

    func validateSystemFields() throws(WireError) {
        if versionVector.isEmpty {
            guard creation == nil, heads.isEmpty else {
                throw WireError(
                    .invalidValue, at: 0, "an unsaved record (empty version vector) has no creation stamp and no heads")
            }
            return
        }
        guard let c = creation else {
            throw WireError(.invalidValue, at: 0, "a saved record (non-empty version vector) needs a creation stamp")
        }
        guard isFaithful(c) else {
            throw WireError(
                .invalidValue, at: 0, "creation stamp \(c) is not covered by the version vector (or at timestamp zero)")
        }
        guard !heads.isEmpty else {
            throw WireError(.invalidValue, at: 0, "a saved record needs at least one head")
        }
        for (i, h) in heads.enumerated() {
            if i > 0 && !(heads[i - 1].node < h.node) {
                throw WireError(
                    heads[i - 1].node == h.node ? .duplicate : .unsorted, at: 0,
                    "heads must be sorted by node, one per node")
            }
            guard versionVector.index(of: h.node) != nil else {
                throw WireError(.invalidValue, at: 0, "head \(h.node) has no entry in the version vector")
            }
        }
    }

    func validateExtensions(limits: WireLimits) throws(WireError) {
        guard extensions.count <= limits.maxFieldCount else {
            throw WireError(
                .limitExceeded, at: 0,
                "record has \(extensions.count) extensions, over the limit of \(limits.maxFieldCount) (WireLimits.maxFieldCount)"
            )
        }
        for (i, e) in extensions.enumerated() {
            if i > 0 && extensions[i - 1].tag >= e.tag {
                throw WireError(
                    extensions[i - 1].tag == e.tag ? .duplicate : .unsorted, at: 0,
                    "extension tags must strictly increase; \(e.tag) follows \(extensions[i - 1].tag)")
            }
            guard e.tag & 1 == 1 else {
                throw WireError(
                    .unknownRequiredTag, at: 0,
                    "extension tag \(e.tag) is even (required) and no required extension is defined")
            }
            guard e.bytes.count <= limits.maxBlobBytes else {
                throw WireError(
                    .limitExceeded, at: 0,
                    "extension \(e.tag) has \(e.bytes.count) bytes, over the limit of \(limits.maxBlobBytes) (WireLimits.maxBlobBytes)"
                )
            }
        }
    }

    /// The three names of `id` are 1 to `maxNameBytes` bytes. `what` (the ID's role, for the
    /// error) is built only when one is not.
    static func validateNames(_ id: ID, _ what: @autoclosure () -> String, limits: WireLimits) throws(WireError) {
        try validateName(id.name, what(), "name", limits: limits)
        try validateName(id.zone.name, what(), "zone name", limits: limits)
        try validateName(id.zone.owner, what(), "zone owner", limits: limits)
    }

    /// `n`, the `part` of an ID in `what`, is 1 to `maxNameBytes` bytes.
    static func validateName(_ n: String, _ what: @autoclosure () -> String, _ part: String, limits: WireLimits)
        throws(WireError)
    {
        guard !n.isEmpty, n.utf8.count <= limits.maxNameBytes else {
            throw WireError(
                .invalidName, at: 0, "\(what()) \(part) \(n.debugDescription) must be 1–\(limits.maxNameBytes) bytes")
        }
    }

    /// `value`'s references, assets and list length are valid. `what` (where the value is, for
    /// the error) is built only when something is not: validating a record builds no strings.
    static func validate(_ value: FieldValue, in what: @autoclosure () -> String, limits: WireLimits) throws(WireError)
    {
        switch value {
        case .reference(let r): try validateNames(r.recordID, "\(what()) reference", limits: limits)
        case .asset(let a): try validate(a, in: what())
        case .list(let l):
            guard l.count <= limits.maxListCount else {
                throw WireError(
                    .limitExceeded, at: 0,
                    "\(what()) has \(l.count) elements, over the limit of \(limits.maxListCount) (WireLimits.maxListCount)"
                )
            }
            switch l {
            case .reference(let rs):
                for r in rs { try validateNames(r.recordID, "\(what()) reference", limits: limits) }
            case .asset(let assets): for a in assets { try validate(a, in: what()) }
            default: break
            }
        default: break
        }
    }

    static func validate(_ asset: Asset, in what: @autoclosure () -> String) throws(WireError) {
        guard asset.size >= 0 else {
            throw WireError(.invalidValue, at: 0, "\(what()) has an asset of size \(asset.size); sizes are 0…2^63-1")
        }
    }
}
