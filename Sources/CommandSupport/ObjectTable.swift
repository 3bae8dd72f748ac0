import Foundation
import TributaryCore

/// The table `tributary fetch` and `tributary watch` print on a terminal: a header of key paths, a rule, then a line
/// per object, columns two spaces apart, numbers aligned right, cut to a width.
public enum ObjectTable {
    /// The lines of a table of `rows` (each a cell per column) under `columns`' headers. With a width, a line never
    /// exceeds it: the widest column is narrowed to the next widest's width, then those narrow in turn (a cut cell
    /// ends in `…`), each down to its header's width (at least 4 characters, at most 8); then columns are left out
    /// from the right. Line breaks and tabs in a value are shown as `\n` and `\t`, so each object keeps one line.
    public static func lines(columns: [ObjectColumn], rows: [[String]], width: Int?) -> [String] {
        lines(headers: columns.map(\.key), numeric: columns.map(\.isNumeric), rows: rows, width: width)
    }

    /// The lines of a table of `rows` under `headers`, the columns `numeric` marks aligned right, cut to `width` as
    /// ``lines(columns:rows:width:)`` cuts them.
    public static func lines(headers: [String], numeric: [Bool], rows: [[String]], width: Int?) -> [String] {
        guard !headers.isEmpty else { return [] }
        var widths = headers.indices.map { index in
            rows.reduce(headers[index].count) { max($0, $1[index].count) }
        }
        var shown = headers.count
        if let width {
            let floor = widths.indices.map { min(widths[$0], max(4, min(headers[$0].count, 8))) }
            var total = widths.reduce(0, +) + 2 * (shown - 1)
            while total > width {
                let widest = widths[..<shown].indices.filter { widths[$0] > floor[$0] }.max { widths[$0] < widths[$1] }
                guard let widest else { break }
                // Down to the next widest column's width at once, then one character at a time in turn.
                let next = widths[..<shown].indices.filter { $0 != widest }.map { widths[$0] }.max() ?? 0
                let cut = min(total - width, widths[widest] - floor[widest], max(1, widths[widest] - next))
                widths[widest] -= cut
                total -= cut
            }
            while total > width, shown > 1 {
                shown -= 1
                total -= widths[shown] + 2
            }
            if total > width { widths[0] = max(1, width) }
        }
        func line(_ cells: [String], rule: Bool = false) -> String {
            var text = ""
            for index in 0..<shown {
                let cell = fit(cells[index], widths[index])
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                let last = index == shown - 1
                if numeric[index] && !rule {
                    text += padding + cell
                } else {
                    text += cell + (last ? "" : padding)
                }
                if !last { text += "  " }
            }
            return text
        }
        return [
            line(headers),
            line(widths.map { String(repeating: "-", count: $0) }, rule: true),
        ] + rows.map { line($0) }
    }

    /// `text` cut to `width` characters, ending in `…` when cut.
    public static func fit(_ text: String, _ width: Int) -> String {
        guard text.count > width else { return text }
        guard width > 1 else { return String(text.prefix(width)) }
        return String(text.prefix(width - 1)) + "…"
    }

    /// A value in a cell: strings as they are (control characters escaped), the rest as `tributary fetch`'s lines
    /// give them.
    static func text(_ value: AttributeValue) -> String {
        guard case .string(let string) = value else { return ObjectText.text(value) }
        return ObjectText.escaped(string, quotes: false)
    }
}
