import Foundation
import TributaryCore

/// How `tributary fetch` prints objects as text, and the value encodings it shares with ``JSONOutput``.
public enum ObjectText {
    /// One line: `PullRequest/<uuid>  version 12  number=7 title="Fix it" score=nil author=<uuid> reviewers=[]`,
    /// attributes then relationships in the model's order, strings quoted as in JSON.
    public static func line(_ object: FetchedObject, prefetched: Bool = false) -> String {
        var fields: [String] = []
        for attribute in object.entity.attributes {
            fields.append("\(attribute.name)=\(object.attributes[attribute.name].map(text) ?? "nil")")
        }
        for relationship in object.entity.relationships {
            let value =
                relationship.isToMany
                ? "[" + (object.toMany[relationship.name] ?? []).map(id).joined(separator: ",") + "]"
                : object.toOne[relationship.name].map(id) ?? "nil"
            fields.append("\(relationship.name)=\(value)")
        }
        let marker = prefetched ? "prefetched " : ""
        return "\(marker)\(object.id.entity)/\(id(object.id))  version \(object.version)  "
            + fields.joined(separator: " ")
    }

    /// An object id as the CLI prints it: the lowercase uuid.
    public static func id(_ id: ObjectID) -> String {
        id.uuid.uuidString.lowercased()
    }

    /// A date as ISO 8601 in UTC, as an import row gives it: whole seconds (`2024-05-01T12:00:00Z`), or with the
    /// fraction to the microsecond when there is one (`2024-05-01T12:00:00.250Z`, trailing zeros dropped).
    public static func date(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        let whole = seconds.rounded(.down)
        let micros = Int(((seconds - whole) * 1_000_000).rounded())
        // A fraction that rounds to a whole second moves to the next second.
        let base = Date(timeIntervalSince1970: micros == 1_000_000 ? whole + 1 : whole)
        let text = base.formatted(.iso8601)
        guard micros != 0, micros != 1_000_000 else { return text }
        var fraction = String(micros)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return String(text.dropLast()) + "." + fraction + "Z"
    }

    /// `NaN`, `Infinity` or `-Infinity`: a non-finite double, which JSON has no number for.
    static func nonFinite(_ number: Double) -> String {
        number.isNaN ? "NaN" : number > 0 ? "Infinity" : "-Infinity"
    }

    /// A value in a text line: strings quoted with JSON's escapes, the rest as the JSON lines give them.
    static func text(_ value: AttributeValue) -> String {
        switch value {
        case .string(let string): quoted(string)
        case .double(let number): number.isFinite ? String(number) : nonFinite(number)
        default: "\(JSONOutput.jsonValue(value))"
        }
    }

    /// `"…"` with `"`, `\` and control characters escaped, so a value stays on its line.
    static func quoted(_ string: String) -> String {
        "\"" + escaped(string, quotes: true) + "\""
    }

    /// `string` with its control characters escaped as JSON escapes them (`\n`, `\t`, `\u0001`), and with
    /// `quotes`, `"` and `\` too.
    static func escaped(_ string: String, quotes: Bool) -> String {
        var result = ""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"" where quotes: result += "\\\""
            case "\\" where quotes: result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20: result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
