import Foundation

extension FetchPredicate: CustomStringConvertible {
    /// A canonical format string that ``init(format:_:)`` parses back to an equal predicate.
    ///
    /// The round trip is exact for predicates the parser or the ``Key`` builder make (ANDs and ORs flattened, with
    /// at least two operands) whose keys are identifiers. An empty AND prints as `TRUEPREDICATE`, an empty OR as
    /// `FALSEPREDICATE`, a one-operand AND or OR as its operand. Dates print as `CAST(<seconds since 2001>,
    /// "NSDate")`, uuids as `CAST("<uuid>", "UUID")`, data as `CAST("<base64>", "NSData")`; NaN prints as `nan`,
    /// which does not parse (compiling refuses NaN anyway).
    public var description: String { format(inside: .top) }

    private enum Context {
        case top, and, or, not
    }

    private func format(inside context: Context) -> String {
        switch self {
        case .constant(let value):
            return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .comparison(let comparison):
            return comparison.description
        case .and(let operands):
            if operands.isEmpty { return "TRUEPREDICATE" }
            if operands.count == 1 { return operands[0].format(inside: context) }
            let text = operands.map { $0.format(inside: .and) }.joined(separator: " AND ")
            return context == .and || context == .not ? "(\(text))" : text
        case .or(let operands):
            if operands.isEmpty { return "FALSEPREDICATE" }
            if operands.count == 1 { return operands[0].format(inside: context) }
            let text = operands.map { $0.format(inside: .or) }.joined(separator: " OR ")
            return context == .top ? text : "(\(text))"
        case .not(let operand):
            return "NOT " + operand.format(inside: .not)
        }
    }
}

extension FetchPredicate.Comparison: CustomStringConvertible {
    /// The comparison as a format string: `ANY key.path OP[cd] value`.
    public var description: String {
        let quantifier = quantifier == .direct ? "" : quantifier.formatWord + " "
        let modifier =
            caseInsensitive || diacriticInsensitive
            ? "[" + (caseInsensitive ? "c" : "") + (diacriticInsensitive ? "d" : "") + "]" : ""
        return "\(quantifier)\(Self.formatKeyPath(key)) \(op.formatSymbol)\(modifier) \(value)"
    }

    /// A key path as the parser reads it: each component formatted by ``formatKey(_:)``, `@count` as it is.
    static func formatKeyPath(_ key: String) -> String {
        key.split(separator: ".", omittingEmptySubsequences: false).map { component in
            component.hasPrefix("@") ? String(component) : formatKey(String(component))
        }.joined(separator: ".")
    }

    /// A key as the parser reads it: `#` before words the parser reserves. Keys that are not identifiers are printed
    /// as they are and do not parse back.
    static func formatKey(_ key: String) -> String {
        let isIdentifier =
            !key.isEmpty
            && key.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
            }
            && !("0"..."9").contains(key.unicodeScalars.first ?? "0")
        guard isIdentifier, PredicateParser.reservedKeyWords.contains(key.uppercased()) else { return key }
        return "#" + key
    }
}

extension FetchPredicate.Quantifier {
    /// The quantifier as format strings write it (`ANY`, `ALL`, `NONE`; empty for ``direct``).
    var formatWord: String {
        switch self {
        case .direct: ""
        case .any: "ANY"
        case .all: "ALL"
        case .none: "NONE"
        }
    }
}

extension FetchPredicate.ComparisonOperator {
    /// The operator as format strings write it.
    var formatSymbol: String {
        switch self {
        case .equal: "=="
        case .notEqual: "!="
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        case .greaterOrEqual: ">="
        case .in: "IN"
        case .beginsWith: "BEGINSWITH"
        case .endsWith: "ENDSWITH"
        case .contains: "CONTAINS"
        case .like: "LIKE"
        }
    }

    /// The SQL operator for `=`, `<>` and the orders.
    var sqlSymbol: String {
        switch self {
        case .equal: "="
        case .notEqual: "<>"
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        case .greaterOrEqual: ">="
        default: "="
        }
    }
}

extension PredicateValue: CustomStringConvertible {
    /// The value as a format-string literal that the parser reads back to an equal value.
    public var description: String {
        switch self {
        case .null: "nil"
        case .string(let string): Self.quote(string)
        case .int(let integer): String(integer)
        case .double(let double): Self.format(double)
        case .bool(let bool): bool ? "TRUE" : "FALSE"
        case .date(let date): "CAST(\(Self.format(date.timeIntervalSinceReferenceDate)), \"NSDate\")"
        case .data(let data): "CAST(\(Self.quote(data.base64EncodedString())), \"NSData\")"
        case .uuid(let uuid): "CAST(\(Self.quote(uuid.uuidString)), \"UUID\")"
        case .list(let values): "{" + values.map(\.description).joined(separator: ", ") + "}"
        }
    }

    /// A double literal: Swift's shortest round-tripping form (always with `.` or an exponent), `1e999` for infinity.
    private static func format(_ double: Double) -> String {
        if double.isInfinite { return double < 0 ? "-1e999" : "1e999" }
        return "\(double)"
    }

    /// A double-quoted string literal with `\\`, `\"`, `\n`, `\t`, `\r` and `\0` escaped.
    static func quote(_ string: String) -> String {
        var quoted = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\\": quoted += "\\\\"
            case "\"": quoted += "\\\""
            case "\n": quoted += "\\n"
            case "\t": quoted += "\\t"
            case "\r": quoted += "\\r"
            case "\0": quoted += "\\0"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}
