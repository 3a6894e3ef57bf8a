// SlotLayoutTests: the diff's bitwise slot comparison sees the field slot's real layout.

import Testing
import ShoalWire
@testable import ShoalDiff

@Suite struct SlotLayoutTests {
    /// On 64-bit platforms a slot's stored bytes are where ``SlotLayout`` expects them, so the
    /// diff and merge walks take the unrolled compare. A new stored property, or one moved, makes
    /// the layout fall back to comparing whole slots, padding included: still correct, but every
    /// unchanged slot whose padding differs is compared value by value.
    @Test func theFieldSlotHasTheTypicalLayout() {
        #expect(
            MemoryLayout<Int>.size != 8 || SlotLayout.field.isTypical,
            "Record.Field's stored bytes are \(SlotLayout.field.first) and \(SlotLayout.field.second); update SlotLayout's typical ranges"
        )
    }

    /// Slots equal by value compare equal, bitwise or not; a removed-field marker never equals a
    /// slot holding the value a marker stores.
    @Test func identicalSlotsAndMarkers() {
        let name = "title"
        let set = Record.Field(name: name, value: .bool(false), stamp: nil)
        let removed = Record.Field(name: name, value: nil, stamp: nil)
        let copy = [set][0]
        withUnsafePointer(to: set) { a in
            withUnsafePointer(to: copy) { b in
                #expect(SlotEquality.identical(a, b, .field) && SlotEquality.sameContent(a, b))
            }
            withUnsafePointer(to: removed) { b in
                #expect(!SlotEquality.identical(a, b, .field))
                #expect(!SlotEquality.sameContent(a, b))
            }
        }
        #expect(set != removed)
    }
}
