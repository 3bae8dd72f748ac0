import ArgumentParser
import Foundation
import TributaryCore

/// `--entity` and `--where` for commands that select objects of the store (`tributary fetch`, `tributary count`).
///
/// The predicate is parsed here, before anything is sent, so a syntax error is reported as the parser words it
/// (offset and token) with a caret under the token; the coordinator checks the keys and types against its model.
public struct FetchSelectionOptions: ParsableArguments {
    @Option(help: "The entity whose objects are selected.")
    public var entity: String

    @Option(
        name: .customLong("where"),
        help: ArgumentHelp(
            "A predicate format string with literal values, e.g. 'state == \"open\" AND additions > 100' (the grammar of docs/contexts.md#predicates).",
            valueName: "format"))
    public var predicateFormat: String?

    public init() {}

    public func validate() throws {
        _ = try predicate()
    }

    /// The predicate `--where` gives; nil without it.
    /// - Throws: `ValidationError` holding the parser's message, then the format with a caret under the offending
    ///   token.
    public func predicate() throws -> FetchPredicate? {
        guard let predicateFormat else { return nil }
        do {
            return try FetchPredicate(format: predicateFormat)
        } catch let error as FetchPredicateError {
            throw ValidationError(Self.message(for: error, in: predicateFormat))
        }
    }

    /// `--where: <the parser's message>` (or another `flag`'s), and for a one-line format, the format with a caret
    /// under the token the error names (offsets count Unicode scalars, as the parser does).
    static func message(for error: FetchPredicateError, in format: String, flag: String = "--where") -> String {
        var message = "\(flag): \(error.message)"
        if let offset = error.offset, !format.contains(where: \.isNewline), offset <= format.unicodeScalars.count {
            message += "\n  \(format)\n  \(String(repeating: " ", count: offset))^"
        }
        return message
    }
}

/// `--sort` of `tributary fetch`: comma-separated keys, each ascending, or descending with a leading `-`.
public enum FetchSortList {
    /// The sort keys `text` names: `additions`, `-additions,number`, `author.login,-reviewers.@count`. The keys are
    /// checked by the coordinator against its model.
    /// - Throws: `ValidationError` for an empty key.
    public static func parse(_ text: String) throws -> [FetchSort] {
        try text.split(separator: ",", omittingEmptySubsequences: false).map { part in
            let trimmed = part.trimmingCharacters(in: .whitespaces)
            let descending = trimmed.hasPrefix("-")
            let key = descending ? String(trimmed.dropFirst()) : trimmed
            guard !key.isEmpty, !key.contains(where: \.isWhitespace) else {
                throw ValidationError(
                    "--sort takes comma-separated keys, each optionally prefixed by '-' for descending "
                        + "(e.g. -additions,number); '\(text)' has an empty or malformed key")
            }
            return FetchSort(key, ascending: !descending)
        }
    }
}
