import Foundation

/// The string operations of predicates, shared by the SQL functions and in-memory evaluation so both give the same
/// answers: case folding, BEGINSWITH, ENDSWITH, CONTAINS and LIKE.
///
/// Case-sensitive operations work on UTF-8 bytes (equivalent to Unicode scalars, since UTF-8 is self-synchronizing);
/// no Unicode normalization is applied, as SQLite applies none.
package enum PredicateText {
    /// Unicode case folding (`ß` → `ss`, `Σ`/`ς` → `σ`), without diacritic folding or normalization. ASCII strings
    /// take a fast path with the same result.
    static func foldCase(_ string: String) -> String {
        if string.utf8.allSatisfy({ $0 < 0x80 }) {
            guard string.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return string }
            return String(decoding: string.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        return string.folding(options: .caseInsensitive, locale: nil)
    }

    /// The bytes `[c]` comparisons compare: a 0x01 marker, then the folded string's UTF-8. The marker keeps the key
    /// non-empty (an empty blob would bind as NULL) without changing the order.
    package static func foldKey(_ string: String) -> Data {
        var key = Data([1])
        key.append(contentsOf: foldCase(string).utf8)
        return key
    }

    /// Whether `value` begins with `prefix`.
    package static func beginsWith(_ value: String, _ prefix: String, foldCase fold: Bool) -> Bool {
        let (value, prefix) = fold ? (foldCase(value), foldCase(prefix)) : (value, prefix)
        return value.utf8.starts(with: prefix.utf8)
    }

    /// Whether `value` ends with `suffix`.
    package static func endsWith(_ value: String, _ suffix: String, foldCase fold: Bool) -> Bool {
        let (value, suffix) = fold ? (foldCase(value), foldCase(suffix)) : (value, suffix)
        return value.utf8.reversed().starts(with: suffix.utf8.reversed())
    }

    /// Whether `value` contains `substring` (the empty string is in every string).
    package static func contains(_ value: String, _ substring: String, foldCase fold: Bool) -> Bool {
        let (value, substring) = fold ? (foldCase(value), foldCase(substring)) : (value, substring)
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
    package static func like(_ value: String, pattern: String, foldCase fold: Bool) -> Bool {
        let (value, pattern) = fold ? (foldCase(value), foldCase(pattern)) : (value, pattern)
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
