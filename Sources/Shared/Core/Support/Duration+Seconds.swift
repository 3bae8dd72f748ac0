extension Duration {
    /// The duration in seconds, as a `Double`.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds, rounded (as the store and the wire keep delays and timeouts).
    public var wholeMilliseconds: Int64 {
        Int64((seconds * 1000).rounded())
    }
}
