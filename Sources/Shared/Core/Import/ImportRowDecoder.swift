import Foundation

/// Applies NDJSON rows of one entity to a context: attributes by name, a to-one relationship as a nested object
/// holding the destination's unique attributes (find-or-create), a to-many as an array of such objects. A row
/// whose entity has a uniqueness constraint upserts the object with those values.
package struct ImportRowDecoder {
    let entity: Entity
    let model: Model
    private static let isoWithFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let iso = Date.ISO8601FormatStyle()

    package init(entity: Entity, model: Model) {
        self.entity = entity
        self.model = model
    }

    /// Parses one line and applies it to `context`.
    package func apply(_ line: UnsafeBufferPointer<UInt8>, number: Int, to context: ObjectContext) throws {
        let row: [String: JSONValue]
        switch Result(catching: { () throws(JSONParser.SyntaxError) in try JSONParser.parse(line) }) {
        case .success(.object(let object)): row = object
        case .success(let other): throw ImportError(line: number, "a row must be a JSON object, not \(other.kindName)")
        case .failure(let error): throw ImportError(line: number, "not valid JSON: \(error)")
        }
        do {
            try apply(row, of: entity, to: context)
        } catch let error as ContextError {
            throw ImportError(line: number, error.message)
        } catch let error as FieldError {
            throw ImportError(line: number, error.message)
        }
    }

    private struct FieldError: Error {
        let message: String
    }

    @discardableResult
    private func apply(_ row: [String: JSONValue], of entity: Entity, to context: ObjectContext) throws
        -> ManagedObject
    {
        for key in row.keys where entity.attribute(named: key) == nil && entity.relationship(named: key) == nil {
            throw FieldError(message: "entity '\(entity.name)' has no attribute or relationship '\(key)'")
        }
        let object: ManagedObject
        if let constraint = entity.primaryUniqueness {
            var key: [String: AttributeValue] = [:]
            for name in constraint {
                guard let attribute = entity.attribute(named: name), let json = row[name], json != .null else {
                    throw FieldError(
                        message:
                            "'\(entity.name)' rows need '\(name)' (its uniqueness constraint is \(constraint.joined(separator: ", ")))"
                    )
                }
                key[name] = try value(json, for: attribute, in: entity)
            }
            object = try context.findOrCreate(entity.name, matching: key)
        } else {
            object = try context.insert(entity.name)
        }
        for (index, attribute) in entity.attributes.enumerated() {
            guard let json = row[attribute.name] else { continue }
            try object.setValue(json == .null ? nil : value(json, for: attribute, in: entity), at: index)
        }
        for relationship in entity.relationships {
            guard let json = row[relationship.name] else { continue }
            try applyRelationship(relationship, json, of: entity, to: object, in: context)
        }
        if object.isInserted {
            for (index, attribute) in entity.attributes.enumerated()
            where !attribute.isOptional && object.values[index] == nil {
                throw FieldError(message: "'\(entity.name)' is missing required attribute '\(attribute.name)'")
            }
        }
        return object
    }

    private func applyRelationship(
        _ relationship: Relationship, _ json: JSONValue, of entity: Entity, to object: ManagedObject,
        in context: ObjectContext
    ) throws {
        let destination = try model.requireEntity(named: relationship.destination)
        let label = "'\(entity.name).\(relationship.name)'"
        if relationship.isToMany {
            guard case .array(let items) = json else {
                throw FieldError(
                    message: "\(label) is a to-many relationship: expected an array of objects, got \(json.kindName)")
            }
            let targets = try items.map { item in
                guard case .object(let fields) = item else {
                    throw FieldError(message: "\(label) items must be objects, got \(item.kindName)")
                }
                return try apply(fields, of: destination, to: context)
            }
            try object.setDestinations(targets, for: relationship.name)
        } else {
            switch json {
            case .null: try object.setDestination(nil, for: relationship.name)
            case .object(let fields):
                try object.setDestination(apply(fields, of: destination, to: context), for: relationship.name)
            default:
                throw FieldError(message: "\(label) is a to-one relationship: expected an object, got \(json.kindName)")
            }
        }
    }

    private func value(_ json: JSONValue, for attribute: Attribute, in entity: Entity) throws -> AttributeValue {
        let label = "'\(entity.name).\(attribute.name)'"
        func mismatch(_ expected: String) -> FieldError {
            FieldError(message: "\(label) is \(attribute.type.rawValue): expected \(expected), got \(json.kindName)")
        }
        switch (attribute.type, json) {
        case (.string, .string(let text)): return .string(text)
        case (.int, .int(let number)): return .int(number)
        case (.double, .int(let number)): return .double(Double(number))
        case (.double, .double(let number)): return .double(number)
        case (.bool, .bool(let flag)): return .bool(flag)
        case (.date, .string(let text)):
            guard let date = (try? Self.iso.parse(text)) ?? (try? Self.isoWithFraction.parse(text)) else {
                throw FieldError(message: "\(label) is a date: '\(text)' is not ISO 8601 (e.g. 2024-05-01T12:00:00Z)")
            }
            return .date(date)
        case (.data, .string(let text)):
            guard let data = Data(base64Encoded: text) else {
                throw FieldError(message: "\(label) is data: the string is not base64")
            }
            return .data(data)
        case (.uuid, .string(let text)):
            guard let uuid = UUID(uuidString: text) else {
                throw FieldError(message: "\(label) is a uuid: '\(text)' is not a UUID")
            }
            return .uuid(uuid)
        case (.string, _): throw mismatch("a string")
        case (.int, _): throw mismatch("an integer")
        case (.double, _): throw mismatch("a number")
        case (.bool, _): throw mismatch("true or false")
        case (.date, _): throw mismatch("an ISO 8601 string")
        case (.data, _): throw mismatch("a base64 string")
        case (.uuid, _): throw mismatch("a UUID string")
        }
    }
}
