/// A function over many values (Core Data's `NSExpression` functions `count:`, `sum:`, `average:`, `min:`, `max:`
/// and the key path operators `@count`, `@sum`, `@avg`, `@min`, `@max`).
///
/// Results follow Core Data's types: a count and a sum of ints are ints (a sum that overflows 64 bits is an error,
/// never a wrap); an average is a double; a minimum or a maximum keeps the attribute's type, dates included. Nil
/// values are skipped as SQL skips them; the sum of no values is 0, their average, minimum and maximum nil.
public enum AggregateFunction: String, Sendable, Hashable, CaseIterable, Codable {
    /// How many values there are (or objects, without a key).
    case count
    /// The values added up: int and double attributes, and `@count`.
    case sum
    /// The mean of the values: int and double attributes, and `@count`.
    case avg
    /// The smallest value: int, double, date and string attributes (strings by their UTF-8 bytes).
    case min
    /// The largest value: int, double, date and string attributes (strings by their UTF-8 bytes).
    case max

    /// The key path operator: `@sum`.
    public var keyPathOperator: String { "@" + rawValue }

    /// The function a key path operator names (`@sum`, case-insensitive); nil for anything else.
    public init?(keyPathOperator: String) {
        guard keyPathOperator.hasPrefix("@"), let function = Self(rawValue: keyPathOperator.dropFirst().lowercased())
        else { return nil }
        self = function
    }

    /// The function of the SQL values `value` in a group: `SUM(value)`, a sum of none being 0 as Core Data's is.
    func sql(of value: String) -> String {
        switch self {
        case .count: "COUNT(\(value))"
        case .sum: "COALESCE(SUM(\(value)), 0)"
        case .avg: "AVG(\(value))"
        case .min: "MIN(\(value))"
        case .max: "MAX(\(value))"
        }
    }

    /// Whether the function takes values of `type`: sums and averages numbers, minimums and maximums also dates and
    /// strings, counts anything.
    func accepts(_ type: AttributeType) -> Bool {
        switch self {
        case .count: true
        case .sum, .avg: type == .int || type == .double
        case .min, .max: [.int, .double, .date, .string].contains(type)
        }
    }

    /// The type of the result over values of `type` (see ``accepts(_:)``).
    func resultType(over type: AttributeType) -> AttributeType {
        switch self {
        case .count: .int
        case .sum, .min, .max: type
        case .avg: .double
        }
    }

    /// What the function takes, for error messages.
    var acceptedTypes: String {
        switch self {
        case .count: "any attribute or relationship"
        case .sum, .avg: "an int or double attribute, or a @count"
        case .min, .max: "an int, double, date or string attribute"
        }
    }

    /// Applies the function to `values` (nil values skipped), as SQLite computes it for a column of `type`.
    /// - Throws: ``AggregateError`` when a sum of ints overflows 64 bits.
    func apply(to values: some Sequence<SQLValue>, type: AttributeType) throws -> SQLValue {
        var count: Int64 = 0
        var intSum: Int64 = 0
        var doubleSum = 0.0
        var best: SQLValue = .null
        for value in values where value != .null {
            count += 1
            switch self {
            case .count: break
            case .sum, .avg:
                switch value {
                case .integer(let integer):
                    doubleSum += Double(integer)
                    if type == .int {
                        let (sum, overflow) = intSum.addingReportingOverflow(integer)
                        if overflow && self == .sum { throw AggregateError.overflow }
                        intSum = sum
                    }
                case .real(let real): doubleSum += real
                default: break
                }
            case .min:
                if best == .null || SQLValue.compare(value, best) < 0 { best = value }
            case .max:
                if best == .null || SQLValue.compare(value, best) > 0 { best = value }
            }
        }
        switch self {
        case .count: return .integer(count)
        case .sum: return type == .int ? .integer(intSum) : .real(doubleSum)
        case .avg: return count == 0 ? .null : .real(doubleSum / Double(count))
        case .min, .max: return best
        }
    }
}

/// Why an aggregate could not be computed from values that are all valid.
package enum AggregateError: Error, Sendable {
    /// A sum of ints does not fit in 64 bits.
    case overflow
}
