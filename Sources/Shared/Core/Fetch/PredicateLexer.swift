/// Splits a predicate format string into tokens. Works on Unicode scalars, so offsets count scalars.
struct PredicateLexer {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ format: String) {
        scalars = Array(format.unicodeScalars)
    }

    /// All tokens, ending with `.end`.
    /// - Throws: ``FetchPredicateError`` of kind `syntax` naming the offending character, or `unsupported` for `$variables`.
    mutating func tokens() throws -> [PredicateToken] {
        var tokens: [PredicateToken] = []
        while true {
            let token = try next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        let position = index + ahead
        return position < scalars.count ? scalars[position] : nil
    }

    private func text(from start: Int) -> String {
        String(String.UnicodeScalarView(scalars[start..<min(index, scalars.count)]))
    }

    private static func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
    }

    private static func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
        isIdentifierStart(scalar) || isDigit(scalar)
    }

    private static func isDigit(_ scalar: Unicode.Scalar?) -> Bool {
        guard let scalar else { return false }
        return ("0"..."9").contains(scalar)
    }

    private mutating func next() throws -> PredicateToken {
        while let scalar = peek(), scalar.properties.isWhitespace { index += 1 }
        let start = index
        guard let scalar = peek() else { return PredicateToken(kind: .end, offset: start, text: "") }
        if Self.isIdentifierStart(scalar) {
            let word = identifier()
            return PredicateToken(kind: .identifier(word), offset: start, text: word)
        }
        if Self.isDigit(scalar) || (scalar == "-" && Self.isDigit(peek(1))) {
            return try number()
        }
        switch scalar {
        case "'", "\"": return try string()
        case "%": return try placeholder()
        case "[": return try modifier()
        case "#":
            index += 1
            guard let first = peek(), Self.isIdentifierStart(first) else {
                throw FetchPredicateError.at(.syntax, "'#' must be followed by a key name", offset: start, token: "#")
            }
            let word = identifier()
            return PredicateToken(kind: .escapedKey(word), offset: start, text: "#" + word)
        case "@":
            // `@count` after a key path's `.`: an operator of the path, read as a word the parser checks.
            index += 1
            guard let first = peek(), Self.isIdentifierStart(first) else {
                throw FetchPredicateError.at(
                    .syntax, "'@' must be followed by a name such as count", offset: start, token: "@")
            }
            let word = "@" + identifier()
            return PredicateToken(kind: .identifier(word), offset: start, text: word)
        case "$":
            index += 1
            _ = identifier()
            throw FetchPredicateError.at(
                .unsupported, "variables are not supported; use a placeholder such as %@", offset: start,
                token: text(from: start))
        default:
            return try symbol()
        }
    }

    private mutating func identifier() -> String {
        let start = index
        while let scalar = peek(), Self.isIdentifierPart(scalar) { index += 1 }
        return text(from: start)
    }

    private mutating func digits() {
        while Self.isDigit(peek()) { index += 1 }
    }

    private mutating func number() throws -> PredicateToken {
        let start = index
        if peek() == "-" { index += 1 }
        digits()
        var isDouble = false
        if peek() == ".", Self.isDigit(peek(1)) {
            isDouble = true
            index += 1
            digits()
        }
        if peek() == "e" || peek() == "E" {
            let mark = index
            index += 1
            if peek() == "+" || peek() == "-" { index += 1 }
            if Self.isDigit(peek()) {
                isDouble = true
                digits()
            } else {
                index = mark
            }
        }
        if let scalar = peek(), Self.isIdentifierPart(scalar) || scalar == "." {
            index += 1
            throw FetchPredicateError.at(.syntax, "malformed number", offset: start, token: text(from: start))
        }
        let written = text(from: start)
        if !isDouble, let integer = Int64(written) {
            return PredicateToken(kind: .integer(integer), offset: start, text: written)
        }
        // Integers beyond 64 bits become doubles, as in Core Data; exponents beyond a double's range are infinite.
        guard let double = Double(written) else {
            throw FetchPredicateError.at(.syntax, "malformed number", offset: start, token: written)
        }
        return PredicateToken(kind: .double(double), offset: start, text: written)
    }

    private mutating func string() throws -> PredicateToken {
        let start = index
        let quote = scalars[index]
        index += 1
        var value = String.UnicodeScalarView()
        while true {
            guard let scalar = peek() else {
                throw FetchPredicateError.at(.syntax, "unterminated string", offset: start, token: text(from: start))
            }
            index += 1
            if scalar == quote { break }
            guard scalar == "\\" else {
                value.append(scalar)
                continue
            }
            guard let escaped = peek() else {
                throw FetchPredicateError.at(.syntax, "unterminated string", offset: start, token: text(from: start))
            }
            index += 1
            switch escaped {
            case "\\", "'", "\"": value.append(escaped)
            case "n": value.append("\n")
            case "t": value.append("\t")
            case "r": value.append("\r")
            case "0": value.append("\0")
            default:
                throw FetchPredicateError.at(
                    .syntax, "unknown escape in a string (use \\\\ \\' \\\" \\n \\t \\r \\0)", offset: index - 2,
                    token: "\\" + String(escaped))
            }
        }
        return PredicateToken(kind: .string(String(value)), offset: start, text: text(from: start))
    }

    private mutating func placeholder() throws -> PredicateToken {
        let start = index
        index += 1
        let placeholder: PredicateToken.Placeholder?
        switch peek() {
        case "@": placeholder = .object
        case "K": placeholder = .key
        case "d", "i": placeholder = .integer
        case "f": placeholder = .float
        case "l":
            if peek(1) == "l" { index += 1 }
            switch peek(1) {
            case "d", "i":
                index += 1
                placeholder = .integer
            case "f":
                index += 1
                placeholder = .float
            default: placeholder = nil
            }
        default: placeholder = nil
        }
        if peek() != nil { index += 1 }
        guard let placeholder else {
            throw FetchPredicateError.at(
                .syntax, "unknown placeholder (use %@, %K, %d, %i, %ld, %lld or %f)", offset: start,
                token: text(from: start))
        }
        return PredicateToken(kind: .placeholder(placeholder), offset: start, text: text(from: start))
    }

    private mutating func modifier() throws -> PredicateToken {
        let start = index
        index += 1
        var letters = ""
        while let scalar = peek(), scalar != "]" {
            guard ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar), letters.count < 8 else {
                index += 1
                throw FetchPredicateError.at(.syntax, "malformed modifier", offset: start, token: text(from: start))
            }
            letters.unicodeScalars.append(scalar)
            index += 1
        }
        guard peek() == "]" else {
            throw FetchPredicateError.at(.syntax, "unterminated modifier", offset: start, token: text(from: start))
        }
        index += 1
        return PredicateToken(kind: .modifier(letters.lowercased()), offset: start, text: text(from: start))
    }

    private mutating func symbol() throws -> PredicateToken {
        let start = index
        let first = scalars[index]
        index += 1
        let second = peek()
        var normalized: String?
        switch first {
        case "=":
            switch second {
            case "=": normalized = "=="
            case "<": normalized = "<="
            case ">": normalized = ">="
            default: normalized = "=="
            }
            if second == "=" || second == "<" || second == ">" { index += 1 }
        case "!":
            normalized = second == "=" ? "!=" : "!"
            if second == "=" { index += 1 }
        case "<":
            switch second {
            case "=": normalized = "<="
            case ">": normalized = "!="
            default: normalized = "<"
            }
            if second == "=" || second == ">" { index += 1 }
        case ">":
            normalized = second == "=" ? ">=" : ">"
            if second == "=" { index += 1 }
        case "&":
            if second == "&" {
                index += 1
                normalized = "&&"
            }
        case "|":
            if second == "|" {
                index += 1
                normalized = "||"
            }
        case "(", ")", "{", "}", ",", ".":
            normalized = String(first)
        default:
            break
        }
        guard let normalized else {
            throw FetchPredicateError.at(.syntax, "unexpected character", offset: start, token: text(from: start))
        }
        return PredicateToken(kind: .symbol(normalized), offset: start, text: text(from: start))
    }
}
