// FieldScalarArray: arrays of field scalars, stored as list fields.

import ShoalWire

/// An array of field scalars: stored as a list field of the element's kind, even when empty.
protocol FieldScalarArray {
    /// The list value of the array.
    /// - Throws: ``RecordCodingError`` `valueOutOfRange` for an element that does not fit.
    func listValue(at path: [any CodingKey]) throws(RecordCodingError) -> ListValue
}

extension Array: FieldScalarArray where Element: FieldScalar {
    func listValue(at path: [any CodingKey]) throws(RecordCodingError) -> ListValue {
        var values = [FieldValue]()
        values.reserveCapacity(count)
        for (i, e) in enumerated() { values.append(try e.fieldValue(at: path + [IndexKey(i)])) }
        guard let list = ListValue(values, kind: Element.fieldKind) else {
            throw RecordCodingError(
                .unsupportedValue, path: RecordCodingError.format(path), swiftType: "\(Self.self)",
                "the elements do not make one list of \(Element.fieldKind)")
        }
        return list
    }
}
