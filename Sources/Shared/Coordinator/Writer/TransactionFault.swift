import TributaryCore

/// The first failure of the writer's open transaction that means the store cannot be written (a
/// ``StoreError/Code/unwritable`` error), noted by the writer's statements as they fail. SQLite may roll the whole
/// transaction back on such a failure (a full disk when its cache spills): the writes that come after it are
/// refused with it rather than with a bare "rolled back".
///
/// Used only on the writer's connection, one transaction at a time (see ``WriterState``).
final class TransactionFault {
    /// The first unwritable failure since the transaction began; nil when none.
    private(set) var first: StoreError?

    /// Notes `error` when it is the transaction's first unwritable failure.
    func note(_ error: StoreError) {
        if first == nil, error.code == .unwritable { first = error }
    }

    /// A transaction begins.
    func reset() { first = nil }
}
