/// The SQLite functions compiled predicates call, backed by ``PredicateText`` so SQL and in-memory evaluation agree.
///
/// Strings reach them as BLOBs (`CAST(column AS BLOB)`) or as bound text or blobs: GRDB reads function arguments
/// as C strings, which would cut text at a NUL character, while blobs keep every byte.
package enum PredicateSQLFunction {
    /// `tributary_fold_key(text, folding)`: the ``PredicateText/foldKey(_:_:)`` blob, or NULL for NULL.
    package static let foldKey = "tributary_fold_key"
    /// `tributary_begins_with(value, prefix, folding)`: 1 or 0 (0 when either is NULL).
    package static let beginsWith = "tributary_begins_with"
    /// `tributary_ends_with(value, suffix, folding)`: 1 or 0.
    package static let endsWith = "tributary_ends_with"
    /// `tributary_contains(value, substring, folding)`: 1 or 0.
    package static let contains = "tributary_contains"
    /// `tributary_like(pattern, value, folding)`: 1 or 0.
    package static let like = "tributary_like"
}
