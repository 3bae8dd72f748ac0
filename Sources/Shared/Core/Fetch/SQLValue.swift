import Foundation

/// A value as SQLite stores and compares it (its storage classes), so that in-memory evaluation and sorting order
/// values exactly as SQLite does.
///
/// SQLite orders NULL before numbers, numbers before text, text before blobs; integers and reals compare
/// numerically (exactly, even beyond 2^53); text compares by its UTF-8 bytes (BINARY collation); blobs by memcmp,
/// then length. Equality and hashing follow the same rules (so `"é"` precomposed and decomposed differ, and
/// `integer(2) == real(2.0)`).
package enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    private var classRank: Int {
        switch self {
        case .null: 0
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        }
    }

    /// -1, 0 or 1 as `lhs` sorts before, with or after `rhs` in SQLite.
    static func compare(_ lhs: SQLValue, _ rhs: SQLValue) -> Int {
        switch (lhs, rhs) {
        case (.null, .null): return 0
        case (.integer(let a), .integer(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.real(let a), .real(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.integer(let a), .real(let b)): return compare(a, b)
        case (.real(let a), .integer(let b)): return -compare(b, a)
        case (.text(let a), .text(let b)): return compareUTF8(a, b)
        case (.blob(let a), .blob(let b)): return compareBytes(a, b)
        default:
            let (a, b) = (lhs.classRank, rhs.classRank)
            return a < b ? -1 : (a > b ? 1 : 0)
        }
    }

    /// Compares an integer with a double exactly (no rounding of the integer to a double), as SQLite does.
    static func compare(_ integer: Int64, _ double: Double) -> Int {
        if double.isNaN { return 1 }
        // -2^63 is exact as a double; 2^63 is the first double above Int64.max.
        if double < -9_223_372_036_854_775_808.0 { return 1 }
        if double >= 9_223_372_036_854_775_808.0 { return -1 }
        let truncated = double.rounded(.towardZero)
        let whole = Int64(truncated)
        if integer < whole { return -1 }
        if integer > whole { return 1 }
        return double > truncated ? -1 : (double < truncated ? 1 : 0)
    }

    /// Compares the UTF-8 bytes of two strings (SQLite's BINARY collation).
    static func compareUTF8(_ lhs: String, _ rhs: String) -> Int {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { a in
            rhs.withUTF8 { b in compareRaw(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b)) }
        }
    }

    /// Compares bytes as memcmp, then the shorter first (SQLite's blob order).
    static func compareBytes(_ lhs: Data, _ rhs: Data) -> Int {
        lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in compareRaw(a, b) } }
    }

    static func compareRaw(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
            let result = memcmp(pa, pb, common)
            if result != 0 { return result < 0 ? -1 : 1 }
        }
        return a.count < b.count ? -1 : (a.count > b.count ? 1 : 0)
    }

    package static func == (lhs: SQLValue, rhs: SQLValue) -> Bool {
        compare(lhs, rhs) == 0
    }

    package func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0)
        case .integer(let value):
            hasher.combine(1)
            hasher.combine(value)
        case .real(let value):
            // A real equal to an integer hashes as that integer.
            if let integer = Int64(exactly: value) {
                hasher.combine(1)
                hasher.combine(integer)
            } else {
                hasher.combine(2)
                hasher.combine(value)
            }
        case .text(let value):
            hasher.combine(3)
            var value = value
            value.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        case .blob(let value):
            hasher.combine(4)
            hasher.combine(value)
        }
    }
}

extension SQLValue {
    /// The value SQLite holds for an attribute value in a column of `type`, applying the column's affinity as
    /// SQLite does on insert: REAL columns (double, date) hold reals, INTEGER columns (int, bool) hold integers
    /// (and integral reals as integers). A NaN is NULL, as SQLite stores it.
    init(_ value: AttributeValue?, columnType type: AttributeType) {
        guard let value else {
            self = .null
            return
        }
        switch value {
        case .string(let string): self = .text(string)
        case .int(let integer): self = Self.number(integer, columnType: type)
        case .bool(let bool): self = Self.number(Int64(bool ? 1 : 0), columnType: type)
        case .double(let double): self = Self.number(double, columnType: type)
        case .date(let date): self = Self.number(date.timeIntervalSince1970, columnType: type)
        case .data(let data): self = .blob(data)
        case .uuid(let uuid): self = .blob(uuid.bytes)
        }
    }

    /// A to-one relationship's value: the destination's 16-byte id, or NULL.
    init(_ id: UUID?) {
        self = id.map { .blob($0.bytes) } ?? .null
    }

    private static func number(_ integer: Int64, columnType type: AttributeType) -> SQLValue {
        type.isRealColumn ? .real(Double(integer)) : .integer(integer)
    }

    private static func number(_ double: Double, columnType type: AttributeType) -> SQLValue {
        if double.isNaN { return .null }
        if type.isIntegerColumn, let integer = Int64(exactly: double) { return .integer(integer) }
        return .real(double)
    }
}

extension AttributeValue {
    /// The attribute value of type `type` that SQLite's `value` holds: nil for NULL, and for a value of a storage
    /// class the type does not take.
    package init?(_ value: SQLValue, type: AttributeType) {
        switch (type, value) {
        case (_, .null): return nil
        case (.string, .text(let string)): self = .string(string)
        case (.int, .integer(let integer)): self = .int(integer)
        case (.int, .real(let real)):
            guard let integer = Int64(exactly: real) else { return nil }
            self = .int(integer)
        case (.bool, .integer(let integer)): self = .bool(integer != 0)
        case (.double, .real(let real)): self = .double(real)
        case (.double, .integer(let integer)): self = .double(Double(integer))
        case (.date, .real(let seconds)): self = .date(Date(timeIntervalSince1970: seconds))
        case (.date, .integer(let seconds)): self = .date(Date(timeIntervalSince1970: Double(seconds)))
        case (.data, .blob(let data)): self = .data(data)
        case (.uuid, .blob(let data)) where data.count == 16: self = .uuid(UUID(bytes: data, at: data.startIndex))
        default: return nil
        }
    }
}

extension AttributeType {
    /// Whether the column has REAL affinity.
    var isRealColumn: Bool { self == .double || self == .date }
    /// Whether the column has INTEGER affinity.
    var isIntegerColumn: Bool { self == .int || self == .bool }
}
