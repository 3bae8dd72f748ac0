import Foundation

/// An attribute value compared as the store compares it in a uniqueness constraint: strings byte for byte (SQLite's
/// BINARY collation), not by Unicode canonical equivalence as Swift's `String` does — "é" written precomposed and
/// written as "e" plus a combining accent are two keys in the store, so they must be two keys in memory too.
package struct UniqueKeyValue: Hashable, Sendable {
    package let value: AttributeValue

    package init(_ value: AttributeValue) {
        self.value = value
    }

    package static func == (lhs: UniqueKeyValue, rhs: UniqueKeyValue) -> Bool {
        switch (lhs.value, rhs.value) {
        case (.string(var left), .string(var right)):
            // Bytes, as SQLite compares text (not Swift's canonical equivalence), in one comparison: the writer
            // compares a key for every user an import row names.
            left.withUTF8 { lhs in
                right.withUTF8 { rhs in
                    lhs.count == rhs.count
                        && (lhs.isEmpty || memcmp(lhs.baseAddress!, rhs.baseAddress!, lhs.count) == 0)
                }
            }
        default: lhs.value == rhs.value
        }
    }

    package func hash(into hasher: inout Hasher) {
        guard case .string(let text) = value else {
            hasher.combine(value)
            return
        }
        hasher.combine(0xA5 as UInt8)
        if text.utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            for byte in text.utf8 { hasher.combine(byte) }
        }
        hasher.combine(text.utf8.count)
    }
}
