import Foundation

/// The string operations of predicates, shared by the SQL functions and in-memory evaluation so both give the same
/// answers: case and diacritic folding, BEGINSWITH, ENDSWITH, CONTAINS and LIKE.
///
/// Case-sensitive operations work on UTF-8 bytes (equivalent to Unicode scalars, since UTF-8 is self-synchronizing);
/// no Unicode normalization is applied, as SQLite applies none.
package enum PredicateText {
    /// What a comparison folds away before comparing: `[c]`, `[d]`, `[cd]`. Its raw value is the flag Tributary's
    /// SQL functions take.
    package struct Folding: OptionSet, Sendable, Hashable {
        package let rawValue: Int64
        package init(rawValue: Int64) { self.rawValue = rawValue }

        /// `[c]`: Unicode case folding (`ß` → `ss`, `Σ`/`ς` → `σ`).
        package static let caseInsensitive = Folding(rawValue: 1)
        /// `[d]`: diacritics removed (`é` → `e`, `Å` → `A`).
        package static let diacriticInsensitive = Folding(rawValue: 2)

        /// The folding a comparison's modifiers ask for.
        package init(caseInsensitive: Bool, diacriticInsensitive: Bool) {
            self = []
            if caseInsensitive { insert(.caseInsensitive) }
            if diacriticInsensitive { insert(.diacriticInsensitive) }
        }
    }

    /// The string with `folding` applied, without normalization otherwise. ASCII strings take a fast path with the
    /// same result (they have no diacritics).
    static func fold(_ string: String, _ folding: Folding) -> String {
        guard !folding.isEmpty else { return string }
        if string.utf8.allSatisfy({ $0 < 0x80 }) {
            guard folding.contains(.caseInsensitive), string.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else {
                return string
            }
            return String(decoding: string.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        var options: String.CompareOptions = []
        if folding.contains(.caseInsensitive) { options.insert(.caseInsensitive) }
        if folding.contains(.diacriticInsensitive) { options.insert(.diacriticInsensitive) }
        return string.folding(options: options, locale: nil)
    }

    /// The bytes folded comparisons (`==[c]`, `<[cd]`, `IN[d]`) compare: a 0x01 marker, then the folded string's
    /// UTF-8. The marker keeps the key non-empty (an empty blob would bind as NULL) without changing the order.
    package static func foldKey(_ string: String, _ folding: Folding) -> Data {
        var key = Data([1])
        key.append(contentsOf: fold(string, folding).utf8)
        return key
    }

    /// Whether `value` begins with `prefix`.
    package static func beginsWith(_ value: String, _ prefix: String, folding: Folding) -> Bool {
        let (value, prefix) = (fold(value, folding), fold(prefix, folding))
        return value.utf8.starts(with: prefix.utf8)
    }

    /// Whether `value` ends with `suffix`.
    package static func endsWith(_ value: String, _ suffix: String, folding: Folding) -> Bool {
        let (value, suffix) = (fold(value, folding), fold(suffix, folding))
        return value.utf8.reversed().starts(with: suffix.utf8.reversed())
    }

    /// Whether `value` contains `substring` (the empty string is in every string).
    package static func contains(_ value: String, _ substring: String, folding: Folding) -> Bool {
        let (value, substring) = (fold(value, folding), fold(substring, folding))
        let haystack = Array(value.utf8)
        let needle = Array(substring.utf8)
        guard !needle.isEmpty else { return true }
        guard needle.count <= haystack.count else { return false }
        for start in 0...(haystack.count - needle.count)
        where haystack[start] == needle[0] && haystack[start..<start + needle.count].elementsEqual(needle) {
            return true
        }
        return false
    }

    private enum PatternElement: Equatable {
        case literal(Unicode.Scalar)
        case anyOne
        case anyRun
    }

    /// Whether the whole of `value` matches `pattern`: `*` matches any run of characters (Unicode scalars), `?`
    /// exactly one, and `\` makes the next character literal.
    package static func like(_ value: String, pattern: String, folding: Folding) -> Bool {
        let (value, pattern) = (fold(value, folding), fold(pattern, folding))
        var elements: [PatternElement] = []
        var escaped = false
        for scalar in pattern.unicodeScalars {
            if escaped {
                elements.append(.literal(scalar))
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else if scalar == "*" {
                if elements.last != .anyRun { elements.append(.anyRun) }
            } else if scalar == "?" {
                elements.append(.anyOne)
            } else {
                elements.append(.literal(scalar))
            }
        }
        if escaped { elements.append(.literal("\\")) }
        let scalars = Array(value.unicodeScalars)
        // Greedy matching that backtracks only to the last `*`: O(pattern × value) at worst, no recursion.
        var p = 0
        var v = 0
        var star: (pattern: Int, value: Int)?
        while v < scalars.count {
            if p < elements.count, elements[p] == .anyOne || elements[p] == .literal(scalars[v]) {
                p += 1
                v += 1
            } else if p < elements.count, elements[p] == .anyRun {
                star = (p, v)
                p += 1
            } else if let last = star {
                star = (last.pattern, last.value + 1)
                p = last.pattern + 1
                v = last.value + 1
            } else {
                return false
            }
        }
        while p < elements.count, elements[p] == .anyRun { p += 1 }
        return p == elements.count
    }
}
