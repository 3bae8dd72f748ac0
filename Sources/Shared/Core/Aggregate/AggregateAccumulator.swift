import Foundation

/// One aggregate of one group kept current as objects join and leave it (a live aggregate's group): counts and sums
/// move by each value, an average is their quotient, and a minimum or a maximum follows values that come in. A
/// minimum or maximum whose value leaves, and a sum or average of doubles one of whose values leaves (taking a
/// double back out of a sum can lose what the sum had absorbed: 1e16 + 1 - 1e16 is 0), are marked stale; their
/// owner recomputes them from the group's values.
///
/// Its ``value(type:)`` is what ``AggregateFunction/apply(to:type:)`` gives over the same values, except that a
/// sum of doubles is added up in another order (it may differ from the store's in the last bits).
struct AggregateAccumulator: Sendable {
    let function: AggregateFunction
    /// How many values are not NULL.
    private(set) var count: Int64 = 0
    /// The sum of integer values, wide enough that joins and leaves never overflow on the way.
    private var integerSum: Int128 = 0
    private var doubleSum = 0.0
    /// The minimum or maximum, NULL when there is none.
    private(set) var extreme: SQLValue = .null
    /// Whether the minimum or maximum, or a double of a sum or average, left: the value is unknown until
    /// recomputed.
    private(set) var isStale = false

    init(_ function: AggregateFunction) { self.function = function }

    /// Counts `value` in.
    mutating func add(_ value: SQLValue) {
        guard value != .null else { return }
        count += 1
        switch value {
        case .integer(let integer):
            integerSum += Int128(integer)
        case .real(let real): doubleSum += real
        default: break
        }
        guard !isStale else { return }
        switch function {
        case .min where extreme == .null || SQLValue.compare(value, extreme) < 0: extreme = value
        case .max where extreme == .null || SQLValue.compare(value, extreme) > 0: extreme = value
        default: break
        }
    }

    /// Counts `value` out; a minimum or maximum equal to it becomes stale (unless no value is left).
    mutating func remove(_ value: SQLValue) {
        guard value != .null else { return }
        count -= 1
        switch value {
        case .integer(let integer): integerSum -= Int128(integer)
        case .real(let real): doubleSum -= real
        default: break
        }
        if count == 0 {
            (integerSum, doubleSum, extreme, isStale) = (0, 0, .null, false)
            return
        }
        switch (function, value) {
        case (.min, _), (.max, _): if SQLValue.compare(value, extreme) == 0 { isStale = true }
        case (.sum, .real), (.avg, .real): isStale = true
        default: break
        }
    }

    /// Sets a stale accumulator to the one of `values`, the group's values now.
    mutating func recompute(from values: some Sequence<SQLValue>) {
        var fresh = AggregateAccumulator(function)
        for value in values { fresh.add(value) }
        self = fresh
    }

    /// The aggregate's value over values of `type`, as SQLite gives it.
    /// - Throws: ``AggregateError/overflow`` for a sum of ints beyond 64 bits.
    func value(type: AttributeType) throws -> SQLValue {
        switch function {
        case .count: return .integer(count)
        case .sum:
            guard type == .int else { return .real(doubleSum + Double(integerSum)) }
            guard let sum = Int64(exactly: integerSum) else { throw AggregateError.overflow }
            return .integer(sum)
        case .avg:
            return count == 0 ? .null : .real((doubleSum + Double(integerSum)) / Double(count))
        case .min, .max:
            return extreme
        }
    }
}
