/// Why a predicate or sort could not be parsed, decoded or compiled against an entity.
public struct FetchPredicateError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kinds of problem.
    public enum Kind: String, Sendable {
        /// The format string (or the wire message) is malformed, or the arguments do not match its placeholders.
        case syntax
        /// The key is not an attribute or to-one relationship of the entity.
        case unknownKey
        /// The value's type does not fit the key's type or the operator.
        case wrongType
        /// A Core Data feature Tributary does not implement (key paths, to-many keys, `[d]`, aggregates...).
        case unsupported
        /// A limit of ``PredicateLimits`` was exceeded.
        case tooComplex
    }

    /// What kind of problem it is.
    public let kind: Kind
    /// A message naming the problem; for syntax errors it includes the offset and the offending token.
    public let message: String
    /// For errors in a format string: the offset of the offending token, in Unicode scalars from the start.
    public let offset: Int?
    /// For errors in a format string: the offending token as written (empty at the end of the format).
    public let token: String?

    /// Creates an error.
    public init(_ kind: Kind, _ message: String, offset: Int? = nil, token: String? = nil) {
        self.kind = kind
        self.message = message
        self.offset = offset
        self.token = token
    }

    public var description: String { message }

    /// `'name'`, shortened when long, for naming input in messages.
    static func quoted(_ text: String) -> String {
        let limit = 80
        if text.unicodeScalars.count <= limit { return "'\(text)'" }
        return "'\(String(String.UnicodeScalarView(text.unicodeScalars.prefix(limit))))…'"
    }
}

extension FetchPredicateError {
    /// An error at a token of a format string: the message names the problem, the offset and the token.
    static func at(_ kind: Kind, _ problem: String, offset: Int, token: String) -> FetchPredicateError {
        let shown = token.isEmpty ? "the end of the format" : quoted(token)
        return FetchPredicateError(kind, "\(problem) at offset \(offset) (\(shown))", offset: offset, token: token)
    }

    /// The error for exceeding one of ``PredicateLimits``.
    static func tooComplex(_ problem: String) -> FetchPredicateError {
        FetchPredicateError(.tooComplex, problem)
    }
}
