import ArgumentParser
import Foundation
import TributaryCore

/// `--set key=value` and `--clear key` of `tributary update`: the values of a batch update, typed by the store's
/// model.
public enum BatchValues {
    /// The values `assignments` (`key=value`) and `cleared` (keys set to null) give for `entity`: strings as
    /// written; ints and doubles as numbers; bools as true/false (or 1/0); dates as ISO 8601
    /// (2024-05-01T12:00:00Z, a fraction allowed); uuids and to-one relationships as a uuid; data as base64.
    /// - Throws: `ValidationError` naming the key and what it expected.
    public static func parse(_ assignments: [String], cleared: [String], entity: Entity) throws
        -> [String: AttributeValue?]
    {
        var values: [String: AttributeValue?] = [:]
        for assignment in assignments {
            guard let equals = assignment.firstIndex(of: "="), equals != assignment.startIndex else {
                throw ValidationError("--set takes key=value, not '\(assignment)'")
            }
            let key = String(assignment[..<equals])
            let text = String(assignment[assignment.index(after: equals)...])
            guard values[key] == nil else { throw ValidationError("--set names '\(key)' twice") }
            values[key] = .some(try value(text, for: key, of: entity))
        }
        for key in cleared {
            guard values[key] == nil else { throw ValidationError("'\(key)' is both set and cleared") }
            values[key] = .some(nil)
        }
        guard !values.isEmpty else { throw ValidationError("give at least one --set key=value or --clear key") }
        return values
    }

    static func value(_ text: String, for key: String, of entity: Entity) throws -> AttributeValue {
        if let relationship = entity.relationship(named: key) {
            guard !relationship.isToMany else {
                throw ValidationError("--set \(key): a batch update cannot set the to-many relationship '\(key)'")
            }
            guard let id = UUID(uuidString: text) else {
                throw ValidationError(
                    "--set \(key): the to-one relationship takes a \(relationship.destination) id, not '\(text)'")
            }
            return .uuid(id)
        }
        guard let attribute = entity.attribute(named: key) else {
            let known = (entity.attributes.map(\.name) + entity.relationships.map(\.name)).joined(separator: ", ")
            throw ValidationError("--set \(key): '\(entity.name)' has no such attribute (it has \(known))")
        }
        let parsed: AttributeValue?
        switch attribute.type {
        case .string: parsed = .string(text)
        case .int: parsed = Int64(text).map(AttributeValue.int)
        case .double: parsed = Double(text).map(AttributeValue.double)
        case .bool:
            parsed =
                ["true", "1"].contains(text.lowercased())
                ? .bool(true) : ["false", "0"].contains(text.lowercased()) ? .bool(false) : nil
        case .date: parsed = date(text).map(AttributeValue.date)
        case .uuid: parsed = UUID(uuidString: text).map(AttributeValue.uuid)
        case .data: parsed = Data(base64Encoded: text).map(AttributeValue.data)
        }
        guard let parsed else {
            throw ValidationError("--set \(key): '\(text)' is not a \(attribute.type.rawValue)")
        }
        return parsed
    }

    private static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions.insert(.withFractionalSeconds)
        return formatter.date(from: text)
    }
}
