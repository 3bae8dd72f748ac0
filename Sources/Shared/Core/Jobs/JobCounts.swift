/// How many jobs are in each state.
public struct JobCounts: Sendable, Equatable {
    private var counts: [JobState: UInt64]

    /// Counts from `counts`; a state it leaves out counts 0.
    public init(_ counts: [JobState: UInt64] = [:]) {
        self.counts = counts.filter { $0.value > 0 }
    }

    /// The jobs in `state`.
    public subscript(state: JobState) -> UInt64 {
        get { counts[state] ?? 0 }
        set { counts[state] = newValue == 0 ? nil : newValue }
    }

    /// Jobs in every state together.
    public var total: UInt64 { counts.values.reduce(0, +) }
}
