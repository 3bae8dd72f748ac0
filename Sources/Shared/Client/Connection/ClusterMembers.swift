import Synchronization

/// The endpoints a ``CoordinatorConnection`` may send to (a cluster's members, or one coordinator), and the one it
/// sends to now: the primary once a standby named it, or the next member once the one sent to stayed unconnected.
final class ClusterMembers: Sendable {
    /// How long the member sent to may stay unconnected, holding what is sent to it, before the next is tried.
    static let unreachableAfter: Duration = .seconds(1)
    /// How long a request waits before it is sent again after a `NOT_PRIMARY` that named no primary, or that came
    /// within a second of another: members that disagree during an election are not asked in a tight loop.
    static let redirectPause: Duration = .milliseconds(250)

    /// The endpoints, in the order given.
    let endpoints: [String]
    private let current = Atomic<Int>(0)

    /// The members of a comma-separated list (`tcp://a:7400,tcp://b:7400`); the first is sent to first.
    init(_ list: String) {
        let endpoints = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        self.endpoints = endpoints.isEmpty ? [list] : endpoints
    }

    /// More than one member: requests follow the primary.
    var isCluster: Bool { endpoints.count > 1 }

    /// The index of the member sent to now.
    var target: Int { current.load(ordering: .relaxed) }

    /// Sends to `to` from now on, if `from` is still the member sent to (another change may have come first).
    /// - Returns: whether it changed.
    func move(from: Int, to: Int) -> Bool {
        from != to && current.compareExchange(expected: from, desired: to, ordering: .relaxed).exchanged
    }

    /// The member whose endpoint is `endpoint` (`tcp://` optional on either side), if it is one of these.
    func index(of endpoint: String) -> Int? {
        let bare = { (endpoint: String) in endpoint.hasPrefix("tcp://") ? String(endpoint.dropFirst(6)) : endpoint }
        return endpoints.firstIndex { bare($0) == bare(endpoint) }
    }

    /// The member after `index`, in the order given, round.
    func next(after index: Int) -> Int { (index + 1) % endpoints.count }
}
