import TributaryCore

extension TypedEntity {
    /// The live result of this entity's objects that match `predicate`, in the order of `sorts` (see
    /// ``ViewContext/results(for:)``): `PullRequest.results(in: view, where: PullRequest.merged == false,
    /// sortedBy: [PullRequest.additions.descending], limit: 50)`. Read a snapshot's objects in `view.context`:
    /// `try PullRequest(context.object(with: id))`.
    public static func results(
        in view: ViewContext, where predicate: TypedPredicate<Self>? = nil, sortedBy sorts: [TypedSort<Self>] = [],
        limit: Int = 0, offset: Int = 0
    ) async throws -> LiveResults {
        try await view.results(for: request(where: predicate, sortedBy: sorts, limit: limit, offset: offset))
    }
}
