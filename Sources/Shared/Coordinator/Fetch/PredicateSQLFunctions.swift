import Foundation
import GRDB
import TributaryCore

/// The SQLite side of ``PredicateSQLFunction``: GRDB functions registered on each store connection.
extension PredicateSQLFunction {
    /// The string a function argument holds: text as is, a blob decoded as UTF-8; nil for NULL and numbers.
    static func string(_ value: DatabaseValue) -> String? {
        switch value.storage {
        case .string(let string): string
        case .blob(let data): String(decoding: data, as: UTF8.self)
        case .null, .int64, .double: nil
        }
    }

    static func matcher(_ name: String, _ match: @escaping @Sendable (String, String, Bool) -> Bool)
        -> DatabaseFunction
    {
        DatabaseFunction(name, argumentCount: 3, pure: true) { arguments in
            guard arguments.count == 3, let first = string(arguments[0]), let second = string(arguments[1]) else {
                return Int64(0)
            }
            let caseInsensitive = Int64.fromDatabaseValue(arguments[2]) == 1
            return Int64(match(first, second, caseInsensitive) ? 1 : 0)
        }
    }
}

extension FetchPredicate {
    /// Registers the SQL functions compiled predicates use on a connection. Call it for every connection that runs
    /// compiled predicates (``RootStore`` does, in `prepareDatabase`).
    static func registerSQLFunctions(in db: Database) {
        db.add(
            function: DatabaseFunction(PredicateSQLFunction.foldKey, argumentCount: 1, pure: true) { arguments in
                guard let string = arguments.first.flatMap(PredicateSQLFunction.string) else { return nil }
                return PredicateText.foldKey(string)
            })
        db.add(
            function: PredicateSQLFunction.matcher(PredicateSQLFunction.beginsWith) {
                PredicateText.beginsWith($0, $1, foldCase: $2)
            })
        db.add(
            function: PredicateSQLFunction.matcher(PredicateSQLFunction.endsWith) {
                PredicateText.endsWith($0, $1, foldCase: $2)
            })
        db.add(
            function: PredicateSQLFunction.matcher(PredicateSQLFunction.contains) {
                PredicateText.contains($0, $1, foldCase: $2)
            })
        db.add(
            function: PredicateSQLFunction.matcher(PredicateSQLFunction.like) {
                PredicateText.like($1, pattern: $0, foldCase: $2)
            })
    }
}
