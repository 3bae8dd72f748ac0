/// A token of a predicate format string, with where it starts and how it was written.
struct PredicateToken: Sendable {
    /// A placeholder that takes the next argument.
    enum Placeholder: Sendable, Equatable {
        /// `%@`: any value.
        case object
        /// `%K`: a key name.
        case key
        /// `%d`, `%i`, `%ld`, `%lld`: an integer.
        case integer
        /// `%f`: a number, taken as a double.
        case float
    }

    enum Kind: Sendable, Equatable {
        /// A bare word: a key or a keyword.
        case identifier(String)
        /// `#word`: a key even when the word is a keyword.
        case escapedKey(String)
        case string(String)
        case integer(Int64)
        case double(Double)
        case placeholder(Placeholder)
        /// An operator or punctuation, normalized: `==` for `=`, `!=` for `<>`, `<=` for `=<`, `>=` for `=>`.
        case symbol(String)
        /// The letters of a `[...]` modifier, lowercased.
        case modifier(String)
        case end
    }

    let kind: Kind
    /// The offset of the token's first Unicode scalar in the format.
    let offset: Int
    /// The token as written (empty for the end).
    let text: String

    /// The bare word, if the token is one.
    var word: String? {
        if case .identifier(let word) = kind { return word }
        return nil
    }

    /// Whether the token is the bare word `keyword`, in any case.
    func isKeyword(_ keyword: String) -> Bool {
        word?.uppercased() == keyword
    }

    /// Whether the token is the symbol `symbol`.
    func isSymbol(_ symbol: String) -> Bool {
        kind == .symbol(symbol)
    }
}
