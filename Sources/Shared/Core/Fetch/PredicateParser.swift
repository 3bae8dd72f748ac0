import Foundation

/// A recursive-descent parser for the subset of Core Data's predicate format strings Tributary supports.
///
/// ```
/// predicate  := or END
/// or         := and (("OR" | "||") and)*
/// and        := not (("AND" | "&&") not)*
/// not        := ("NOT" | "!") not | primary
/// primary    := "(" or ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | quantifier? path operator modifier? value
/// quantifier := ANY | SOME | ALL | NONE
/// path       := key ("." key)* ("." "@count")?
/// key        := identifier | "#" identifier | %K
/// modifier   := "[c]" | "[d]" | "[cd]"
/// operator   := == = != <> < <= =< > >= => IN BEGINSWITH ENDSWITH CONTAINS LIKE
/// value      := %@ | %d | %i | %ld | %lld | %f | string | number | TRUE | YES | FALSE | NO | NIL | NULL
///             | "{" (value ("," value)*)? "}" | CAST "(" value "," string ")"
/// ```
///
/// Nested ANDs and ORs are flattened, so `(a AND b) AND c` is one AND of three operands, as the ``Key`` builder
/// makes it.
struct PredicateParser {
    /// Words that cannot be bare keys (write `#word` to use one as a key).
    static let reservedKeyWords: Set<String> = [
        "AND", "OR", "NOT", "TRUEPREDICATE", "FALSEPREDICATE", "ANY", "ALL", "SOME", "NONE", "SUBQUERY", "SELF",
        "FUNCTION", "FETCH", "ANYKEY",
    ]

    private let tokens: [PredicateToken]
    private let arguments: [PredicateValue]
    private var position = 0
    private var argumentIndex = 0
    private var depth = 0

    init(format: String, arguments: [PredicateValue]) throws {
        let length = format.utf8.count
        guard length <= PredicateLimits.maxFormatLength else {
            throw FetchPredicateError.tooComplex(
                "the format is \(length) bytes long; at most \(PredicateLimits.maxFormatLength) are allowed")
        }
        var lexer = PredicateLexer(format)
        tokens = try lexer.tokens()
        self.arguments = arguments
    }

    /// Parses the whole format and checks that every argument was used.
    mutating func parse() throws -> FetchPredicate {
        let predicate = try parseOr()
        guard current.kind == .end else {
            throw error(.syntax, "expected AND, OR or the end of the format")
        }
        guard argumentIndex == arguments.count else {
            throw FetchPredicateError(
                .syntax,
                "too many arguments: the format has \(argumentIndex) placeholder\(argumentIndex == 1 ? "" : "s") "
                    + "but \(arguments.count) argument\(arguments.count == 1 ? " was" : "s were") given")
        }
        try predicate.checkLimits()
        return predicate
    }

    // MARK: - Tokens

    private var current: PredicateToken {
        // The lexer always ends the list with `.end`, and `advance` never moves past it.
        tokens[min(position, tokens.count - 1)]
    }

    private mutating func advance() {
        if position < tokens.count - 1 { position += 1 }
    }

    private func error(_ kind: FetchPredicateError.Kind, _ problem: String, at token: PredicateToken? = nil)
        -> FetchPredicateError
    {
        let token = token ?? current
        return FetchPredicateError.at(kind, problem, offset: token.offset, token: token.text)
    }

    private mutating func nest() throws {
        depth += 1
        if depth > PredicateLimits.maxDepth {
            throw error(.tooComplex, "the predicate is nested deeper than \(PredicateLimits.maxDepth) levels")
        }
    }

    // MARK: - Logical structure

    private mutating func parseOr() throws -> FetchPredicate {
        var operands = try parseAnd().orOperands
        while current.isKeyword("OR") || current.isSymbol("||") {
            advance()
            operands += try parseAnd().orOperands
        }
        return operands.count == 1 ? operands[0] : .or(operands)
    }

    private mutating func parseAnd() throws -> FetchPredicate {
        var operands = try parseNot().andOperands
        while current.isKeyword("AND") || current.isSymbol("&&") {
            advance()
            operands += try parseNot().andOperands
        }
        return operands.count == 1 ? operands[0] : .and(operands)
    }

    private mutating func parseNot() throws -> FetchPredicate {
        guard current.isKeyword("NOT") || current.isSymbol("!") else { return try parsePrimary() }
        advance()
        try nest()
        defer { depth -= 1 }
        return .not(try parseNot())
    }

    private mutating func parsePrimary() throws -> FetchPredicate {
        if current.isSymbol("(") {
            let open = current
            advance()
            try nest()
            let predicate = try parseOr()
            depth -= 1
            guard current.isSymbol(")") else {
                throw error(.syntax, "expected ')' to close the '(' at offset \(open.offset)")
            }
            advance()
            return predicate
        }
        if current.isKeyword("TRUEPREDICATE") || current.isKeyword("FALSEPREDICATE") {
            let value = current.isKeyword("TRUEPREDICATE")
            advance()
            return .constant(value)
        }
        return .comparison(try parseComparison())
    }

    // MARK: - Comparisons

    private mutating func parseComparison() throws -> FetchPredicate.Comparison {
        var quantifier = FetchPredicate.Quantifier.direct
        switch current.word?.uppercased() {
        case "ANY", "SOME": quantifier = .any
        case "ALL": quantifier = .all
        case "NONE": quantifier = .none
        default: break
        }
        if quantifier != .direct { advance() }
        let key = try parseKey()
        let op = try parseOperator(after: key)
        var caseInsensitive = false
        var diacriticInsensitive = false
        if case .modifier(let letters) = current.kind {
            guard !letters.isEmpty, letters.allSatisfy({ $0 == "c" || $0 == "d" }) else {
                throw error(.unsupported, "unknown comparison modifier (only [c], [d] and [cd] are supported)")
            }
            caseInsensitive = letters.contains("c")
            diacriticInsensitive = letters.contains("d")
            advance()
        }
        let value = current.isSymbol("{") ? try parseList() : try parseScalar(inList: false)
        return FetchPredicate.Comparison(
            key: key, op: op, value: value, caseInsensitive: caseInsensitive,
            diacriticInsensitive: diacriticInsensitive, quantifier: quantifier)
    }

    /// A key or a key path: `additions`, `author.login`, `#order.total`, `reviewers.@count`, `lines.@sum.amount`, or
    /// `%K` (whose string may itself be a path).
    private mutating func parseKey() throws -> String {
        var key = try parseKeyComponent(first: true)
        while current.isSymbol(".") {
            advance()
            key += "." + (try parseKeyComponent(first: false))
        }
        return key
    }

    private mutating func parseKeyComponent(first: Bool) throws -> String {
        let token = current
        let key: String
        switch token.kind {
        case .identifier(let word) where word.hasPrefix("@"):
            guard !first else { throw error(.syntax, "\(word) must follow a to-many relationship: write key.\(word)") }
            guard let function = AggregateFunction(keyPathOperator: word) else {
                throw error(.unsupported, "\(word) is not supported; only @count, @sum, @avg, @min and @max are")
            }
            key = function.keyPathOperator
        case .identifier(let word):
            let upper = word.uppercased()
            if ["SUBQUERY", "SELF", "FUNCTION", "FETCH", "ANYKEY"].contains(upper) {
                throw error(.unsupported, "\(upper) is not supported; compare a key or a key path")
            }
            if ["ANY", "ALL", "SOME", "NONE"].contains(upper) {
                throw error(
                    .syntax,
                    first ? "\(upper) must be followed by a key path" : "\(upper) must come before the key path")
            }
            guard !Self.reservedKeyWords.contains(upper) else {
                throw error(.syntax, "expected a key (write #\(word) for a key named '\(word)')")
            }
            key = word
        case .escapedKey(let word):
            key = word
        case .placeholder(.key) where first:
            let argument = try takeArgument(for: token)
            guard case .string(let name) = argument else {
                throw error(.wrongType, "%K needs a string argument (a key name), got \(argument.typeName)")
            }
            key = name
        case .end:
            throw error(.syntax, first ? "expected a comparison" : "expected a key after '.'")
        default:
            throw error(.syntax, first ? "expected a key" : "expected a key after '.'")
        }
        advance()
        return key
    }

    private mutating func parseOperator(after key: String) throws -> FetchPredicate.ComparisonOperator {
        let op: FetchPredicate.ComparisonOperator
        switch current.kind {
        case .symbol("=="): op = .equal
        case .symbol("!="): op = .notEqual
        case .symbol("<"): op = .less
        case .symbol("<="): op = .lessOrEqual
        case .symbol(">"): op = .greater
        case .symbol(">="): op = .greaterOrEqual
        case .identifier(let word):
            switch word.uppercased() {
            case "IN": op = .in
            case "BEGINSWITH": op = .beginsWith
            case "ENDSWITH": op = .endsWith
            case "CONTAINS": op = .contains
            case "LIKE": op = .like
            case "MATCHES": throw error(.unsupported, "MATCHES (regular expressions) is not supported")
            case "BETWEEN": throw error(.unsupported, "BETWEEN is not supported; use >= AND <=")
            default: throw error(.syntax, "unknown comparison operator after \(FetchPredicateError.quoted(key))")
            }
        default:
            throw error(.syntax, "expected a comparison operator after \(FetchPredicateError.quoted(key))")
        }
        advance()
        return op
    }

    private mutating func takeArgument(for token: PredicateToken) throws -> PredicateValue {
        guard argumentIndex < arguments.count else {
            throw error(
                .syntax,
                "missing argument for \(token.text): the format has more placeholders than the \(arguments.count) "
                    + "argument\(arguments.count == 1 ? "" : "s") given", at: token)
        }
        defer { argumentIndex += 1 }
        return arguments[argumentIndex]
    }

    // MARK: - Values

    private mutating func parseList() throws -> PredicateValue {
        let open = current
        advance()
        var values: [PredicateValue] = []
        if current.isSymbol("}") {
            advance()
            return .list(values)
        }
        while true {
            if values.count == PredicateLimits.maxListElements {
                throw error(
                    .tooComplex, "the list has more than \(PredicateLimits.maxListElements) values", at: open)
            }
            values.append(try parseScalar(inList: true))
            if current.isSymbol(",") {
                advance()
                continue
            }
            guard current.isSymbol("}") else {
                throw error(.syntax, "expected ',' or '}' in the list opened at offset \(open.offset)")
            }
            advance()
            return .list(values)
        }
    }

    private mutating func parseScalar(inList: Bool) throws -> PredicateValue {
        let token = current
        let value: PredicateValue
        switch token.kind {
        case .string(let string): value = .string(string)
        case .integer(let integer): value = .int(integer)
        case .double(let double): value = .double(double)
        case .placeholder(let placeholder):
            value = try placeholderValue(placeholder, token: token)
            if inList, case .list = value {
                throw error(.wrongType, "lists cannot be nested", at: token)
            }
        case .identifier(let word):
            switch word.uppercased() {
            case "TRUE", "YES": value = .bool(true)
            case "FALSE", "NO": value = .bool(false)
            case "NIL", "NULL": value = .null
            case "CAST": return try parseCast()
            default:
                throw error(.unsupported, "comparing a key with another key is not supported; expected a value")
            }
        case .escapedKey:
            throw error(.unsupported, "comparing a key with another key is not supported; expected a value")
        case .symbol("{"):
            throw error(.wrongType, "lists cannot be nested")
        default:
            throw error(.syntax, "expected a value")
        }
        advance()
        return value
    }

    private mutating func placeholderValue(_ placeholder: PredicateToken.Placeholder, token: PredicateToken) throws
        -> PredicateValue
    {
        switch placeholder {
        case .key:
            throw error(.unsupported, "comparing a key with another key (%K as a value) is not supported")
        case .object:
            return try takeArgument(for: token)
        case .integer:
            let argument = try takeArgument(for: token)
            guard case .int = argument else {
                throw error(.wrongType, "\(token.text) needs an integer argument, got \(argument.typeName)")
            }
            return argument
        case .float:
            let argument = try takeArgument(for: token)
            switch argument {
            case .int(let integer): return .double(Double(integer))
            case .double: return argument
            default:
                throw error(.wrongType, "\(token.text) needs a number argument, got \(argument.typeName)")
            }
        }
    }

    /// `CAST(<seconds since 2001>, "NSDate")`, `CAST("<uuid>", "UUID")`, `CAST("<base64>", "NSData")`.
    private mutating func parseCast() throws -> PredicateValue {
        advance()
        guard current.isSymbol("(") else { throw error(.syntax, "expected '(' after CAST") }
        advance()
        let operandToken = current
        let operand = try parseScalar(inList: true)
        guard current.isSymbol(",") else { throw error(.syntax, "expected ',' in CAST") }
        advance()
        guard case .string(let type) = current.kind else { throw error(.syntax, "expected a type name in CAST") }
        let typeToken = current
        advance()
        guard current.isSymbol(")") else { throw error(.syntax, "expected ')' to close the CAST") }
        advance()
        switch (type, operand) {
        case ("NSDate", .int(let seconds)), ("Date", .int(let seconds)):
            return .date(Date(timeIntervalSinceReferenceDate: Double(seconds)))
        case ("NSDate", .double(let seconds)), ("Date", .double(let seconds)):
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case ("NSUUID", .string(let text)), ("UUID", .string(let text)):
            guard let uuid = UUID(uuidString: text) else {
                throw error(.wrongType, "CAST to UUID needs a UUID string", at: operandToken)
            }
            return .uuid(uuid)
        case ("NSData", .string(let text)), ("Data", .string(let text)):
            guard let data = Data(base64Encoded: text) else {
                throw error(.wrongType, "CAST to NSData needs a base64 string", at: operandToken)
            }
            return .data(data)
        case ("NSDate", _), ("Date", _), ("NSUUID", _), ("UUID", _), ("NSData", _), ("Data", _):
            throw error(.wrongType, "CAST to \(type) cannot take \(operand.typeName)", at: operandToken)
        default:
            throw error(
                .unsupported,
                "CAST to \(FetchPredicateError.quoted(type)) is not supported (use NSDate, UUID or NSData)",
                at: typeToken)
        }
    }
}

extension FetchPredicate {
    /// Parses a Core Data predicate format string, filling its placeholders from `arguments` in order.
    ///
    /// ```swift
    /// try FetchPredicate(format: "state == %@ AND (additions > %d OR title CONTAINS[c] %@)", "open", 10, "fix")
    /// ```
    ///
    /// Supported: `==` `=` `!=` `<>` `<` `<=` `=<` `>` `>=` `=>` `IN` `BEGINSWITH` `ENDSWITH` `CONTAINS` `LIKE`, the
    /// `[c]`, `[d]` and `[cd]` modifiers, key paths through relationships (`author.login`), `ANY`/`SOME`/`ALL`/`NONE`
    /// before a key path through a to-many relationship, `@count` after one, `AND`/`&&`, `OR`/`||`, `NOT`/`!`,
    /// parentheses, `TRUEPREDICATE`, `FALSEPREDICATE`; values
    /// `%@` `%d` `%i` `%ld` `%lld` `%f`, quoted strings, numbers, `TRUE`/`YES`/`FALSE`/`NO`, `nil`/`NULL`, `{...}`
    /// lists and `CAST(seconds since 2001, "NSDate")`; keys as names, `#name` or `%K`.
    /// - Throws: ``FetchPredicateError`` naming the problem and, for syntax errors, the offset and token.
    public init(format: String, _ arguments: any PredicateArgument...) throws {
        try self.init(format: format, argumentArray: arguments)
    }

    /// Parses a Core Data predicate format string with its arguments in an array (`NSPredicate(format:argumentArray:)`).
    /// - Throws: ``FetchPredicateError`` naming the problem and, for syntax errors, the offset and token.
    public init(format: String, argumentArray arguments: [any PredicateArgument]) throws {
        var parser = try PredicateParser(format: format, arguments: arguments.map(\.predicateValue))
        self = try parser.parse()
    }
}
