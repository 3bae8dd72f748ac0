/// One key of a fetch's order (Core Data's `NSSortDescriptor`), ascending or descending: an attribute or to-one
/// relationship of the fetched entity, a key path through to-one relationships (`author.login`), or `@count` of a
/// to-many relationship (`reviewers.@count`, `author.followers.@count`).
///
/// NULL sorts first ascending and last descending; strings sort by their UTF-8 bytes, data and ids by their bytes.
/// Objects equal on every key are ordered by id.
public struct FetchSort: Sendable, Hashable {
    /// The key sorted by: an attribute, a to-one relationship, a key path through to-one relationships, or `@count`.
    public var key: String
    /// Whether smaller values come first.
    public var ascending: Bool

    /// Sorts by `key`, ascending unless told otherwise.
    public init(_ key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }
}
