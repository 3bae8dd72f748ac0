import TributaryCore

extension TypedEntity {
    /// The live result of this entity's objects that match `predicate`, in the order of `sorts` (see
    /// ``ViewContext/results(for:sectionedBy:metrics:)``): `PullRequest.results(in: view, where: PullRequest.merged
    /// == false, sortedBy: [PullRequest.additions.descending], limit: 50)`. Read a snapshot's objects in
    /// `view.context`: `try PullRequest(context.object(with: id))`.
    public static func results(
        in view: ViewContext, where predicate: TypedPredicate<Self>? = nil, sortedBy sorts: [TypedSort<Self>] = [],
        limit: Int = 0, offset: Int = 0
    ) async throws -> LiveResults {
        try await view.results(for: request(where: predicate, sortedBy: sorts, limit: limit, offset: offset))
    }

    /// The live result as ``results(in:where:sortedBy:limit:offset:)``, its rows grouped into sections by `section`
    /// (`PullRequest.results(in: view, sectionedBy: PullRequest.author[User.login], sortedBy:
    /// [PullRequest.number.descending])`): sorted by `section` ascending first unless `sorts` start with it.
    public static func results<Value>(
        in view: ViewContext, where predicate: TypedPredicate<Self>? = nil, sectionedBy section: TypedKey<Self, Value>,
        sortedBy sorts: [TypedSort<Self>] = [], limit: Int = 0, offset: Int = 0
    ) async throws -> LiveResults {
        try await view.results(
            for: request(where: predicate, sortedBy: sorts, limit: limit, offset: offset), sectionedBy: section.name)
    }
}
