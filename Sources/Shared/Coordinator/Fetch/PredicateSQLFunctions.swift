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

    /// The ``PredicateText/Folding`` a function's flag argument holds (0 for anything but an integer).
    static func folding(_ value: DatabaseValue) -> PredicateText.Folding {
        PredicateText.Folding(rawValue: Int64.fromDatabaseValue(value) ?? 0)
    }

    static func matcher(
        _ name: String, _ match: @escaping @Sendable (String, String, PredicateText.Folding) -> Bool
    ) -> DatabaseFunction {
        DatabaseFunction(name, argumentCount: 3, pure: true) { arguments in
            guard arguments.count == 3, let first = string(arguments[0]), let second = string(arguments[1]) else {
                return Int64(0)
            }
            return Int64(match(first, second, folding(arguments[2])) ? 1 : 0)
        }
    }
}

extension FetchPredicate {
    /// Registers the SQL functions compiled predicates use on a connection. Call it for every connection that runs
    /// compiled predicates (``RootStore`` does, in `prepareDatabase`).
    static func registerSQLFunctions(in db: Database) {
        db.add(
            function: DatabaseFunction(PredicateSQLFunction.foldKey, argumentCount: 2, pure: true) { arguments in
                guard arguments.count == 2, let string = PredicateSQLFunction.string(arguments[0]) else { return nil }
                return PredicateText.foldKey(string, PredicateSQLFunction.folding(arguments[1]))
            })
        db.add(
            function: PredicateSQLFunction.matcher(PredicateSQLFunction.beginsWith) {
                PredicateText.beginsWith($0, $1, folding: $2)
            })
        db.add(
            function: PredicateSQLFunction.matcher(PredicateSQLFunction.endsWith) {
                PredicateText.endsWith($0, $1, folding: $2)
            })
        db.add(
            function: PredicateSQLFunction.matcher(PredicateSQLFunction.contains) {
                PredicateText.contains($0, $1, folding: $2)
            })
        db.add(
            function: PredicateSQLFunction.matcher(PredicateSQLFunction.like) {
                PredicateText.like($1, pattern: $0, folding: $2)
            })
    }
}
