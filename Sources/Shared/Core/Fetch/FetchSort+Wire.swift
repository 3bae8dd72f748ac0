import TributaryProtocol

extension FetchSort {
    /// The sort key as the wire's `SortKey`.
    package var wire: Tributary_V1_SortKey {
        var message = Tributary_V1_SortKey()
        message.key = key
        message.descending = !ascending
        return message
    }

    /// Reads a sort key from the wire; the key is checked when the sort is compiled for an entity.
    package init(wire: Tributary_V1_SortKey) {
        self.init(wire.key, ascending: !wire.descending)
    }
}
