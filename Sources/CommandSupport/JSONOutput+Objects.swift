import Foundation
import TributaryCore

extension JSONOutput {
    /// `tributary fetch --json`: one object on one line, every attribute and relationship of its entity included
    /// (NULL as `null`, an empty to-many as `[]`):
    /// `{"id": "<uuid>", "entity": "PullRequest", "version": 12, "attributes": {...}, "relationships": {...},
    /// "prefetched": false}`.
    ///
    /// Values take the import's encodings (docs/model.md), so a line's attributes are an import row again: strings,
    /// ints and bools as JSON's; doubles as numbers (non-finite ones as the strings `NaN`, `Infinity`,
    /// `-Infinity`); dates as ISO 8601 in UTC (`ObjectText/date(_:)`); data as base64; uuids as lowercase strings.
    /// A to-one relationship is its destination's id or `null`, a to-many one an array of ids.
    public static func object(_ object: FetchedObject, prefetched: Bool = false) throws -> String {
        var attributes: [String: Any] = [:]
        for attribute in object.entity.attributes {
            attributes[attribute.name] = object.attributes[attribute.name].map(jsonValue) ?? NSNull()
        }
        var relationships: [String: Any] = [:]
        for relationship in object.entity.relationships {
            relationships[relationship.name] =
                relationship.isToMany
                ? (object.toMany[relationship.name] ?? []).map(ObjectText.id)
                : object.toOne[relationship.name].map(ObjectText.id) ?? NSNull()
        }
        return try encode([
            "id": ObjectText.id(object.id), "entity": object.id.entity, "version": object.version,
            "attributes": attributes, "relationships": relationships, "prefetched": prefetched,
        ])
    }

    /// An attribute value as JSONSerialization takes it.
    static func jsonValue(_ value: AttributeValue) -> Any {
        switch value {
        case .string(let text): text
        case .int(let number): number
        case .double(let number): number.isFinite ? number : ObjectText.nonFinite(number)
        case .bool(let flag): flag
        case .date(let date): ObjectText.date(date)
        case .data(let bytes): bytes.base64EncodedString()
        case .uuid(let uuid): uuid.uuidString.lowercased()
        }
    }
}
