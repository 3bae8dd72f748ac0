import Foundation
import TributaryProtocol

/// Applies NDJSON rows of one entity to an ``ImportChunk``: attributes by name, a to-one relationship as a nested
/// object holding the destination's unique attributes (find-or-create), a to-many as an array of such objects. A
/// row whose entity has a uniqueness constraint upserts the object with those values.
package struct ImportRowDecoder {
    /// An entity's field names (attributes, then relationships), each relationship's destination, its first
    /// uniqueness constraint's attributes and its required attributes, looked up once rather than per row.
    private struct Plan {
        let entity: Entity
        let names: [String]
        /// By name, for entities with many fields; small ones are searched one name at a time (cheaper than
        /// hashing).
        let byName: [String: Int]?
        let destinations: [Int]
        let key: [Int]?
        let required: [Int]

        /// The field index of `name`: an attribute's index, or the attribute count plus a relationship's.
        func field(_ name: String) -> Int? {
            if let byName { return byName[name] }
            return names.firstIndex(of: name)
        }
    }

    private let plans: [Plan]
    private let root: Int
    private static let isoWithFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let iso = Date.ISO8601FormatStyle()

    package init(entity: Entity, model: Model) {
        let indices = Dictionary(
            model.entities.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        plans = model.entities.map { entity in
            let names = entity.attributes.map(\.name) + entity.relationships.map(\.name)
            let key = entity.primaryUniqueness.map { names in
                names.compactMap { name in entity.attributes.firstIndex { $0.name == name } }
            }
            return Plan(
                entity: entity, names: names,
                byName: names.count > 16
                    ? Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first }) : nil,
                // A model is validated on load: every destination is one of its entities.
                destinations: entity.relationships.map { indices[$0.destination] ?? 0 }, key: key,
                required: entity.attributes.indices.filter { !entity.attributes[$0].isOptional })
        }
        root = indices[entity.name] ?? 0
    }

    /// The change set of one save of an import job: `lines` of `payload` applied to a new batch of `model`.
    package func changeSet(
        of lines: ArraySlice<ImportJob.Line>, in payload: Data, model: Model
    ) throws -> Tributary_V1_ChangeSet {
        var batch = ImportChunk(model: model)
        try payload.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            for line in lines {
                try apply(UnsafeBufferPointer(rebasing: bytes[line.range]), number: line.number, to: &batch)
            }
        }
        return batch.changeSet()
    }

    /// Parses one line and applies it to `batch`.
    package func apply(_ line: UnsafeBufferPointer<UInt8>, number: Int, to batch: inout ImportChunk) throws {
        let row: JSONObject
        switch Result(catching: { () throws(JSONParser.SyntaxError) in try JSONParser.parse(line) }) {
        case .success(.object(let object)): row = object
        case .success(let other): throw ImportError(line: number, "a row must be a JSON object, not \(other.kindName)")
        case .failure(let error): throw ImportError(line: number, "not valid JSON: \(error)")
        }
        do {
            try apply(row, of: root, to: &batch)
        } catch let error as FieldError {
            throw ImportError(line: number, error.message)
        }
    }

    private struct FieldError: Error {
        let message: String
    }

    /// Applies a row (or a nested object, `nested`) of entity `entityIndex`; the object's index in the batch.
    @discardableResult
    private func apply(
        _ row: JSONObject, of entityIndex: Int, to batch: inout ImportChunk, nested: Bool = false
    ) throws -> Int {
        let plan = plans[entityIndex]
        // Each field's member in the row (-1: not in the row), on the stack: an array would be an allocation per
        // object.
        return try withUnsafeTemporaryAllocation(of: Int.self, capacity: plan.names.count) { members in
            members.initialize(repeating: -1)
            for (member, key) in row.keys.enumerated() {
                guard let field = plan.field(key) else {
                    throw FieldError(
                        message: "entity '\(plan.entity.name)' has no attribute or relationship '\(key)'")
                }
                members[field] = member
            }
            return try apply(row, members: members, plan: plan, of: entityIndex, to: &batch, nested: nested)
        }
    }

    /// Applies a row whose fields are at `members` (see ``apply(_:of:to:nested:)``).
    private func apply(
        _ row: JSONObject, members: UnsafeMutableBufferPointer<Int>, plan: Plan, of entityIndex: Int,
        to batch: inout ImportChunk, nested: Bool
    ) throws -> Int {
        let entity = plan.entity
        /// The row's value of a field (nil: not in the row; .null: null).
        func fields(_ field: Int) -> JSONValue? { members[field] < 0 ? nil : row.values[members[field]] }
        let object: Int
        if let constraint = plan.key {
            var key: [AttributeValue] = []
            key.reserveCapacity(constraint.count)
            for index in constraint {
                let attribute = entity.attributes[index]
                guard let json = fields(index), json != .null else {
                    let names = entity.primaryUniqueness ?? []
                    throw FieldError(
                        message:
                            "'\(entity.name)' rows need '\(attribute.name)' (its uniqueness constraint is \(names.joined(separator: ", ")))"
                    )
                }
                key.append(try value(json, for: attribute, in: entity))
            }
            object = batch.findOrCreate(
                entityIndex,
                key: key.count == 1 ? .one(UniqueKeyValue(key[0])) : .many(key.map(UniqueKeyValue.init)))
        } else {
            object = batch.insert(entityIndex)
        }
        for (index, attribute) in entity.attributes.enumerated() {
            guard let json = fields(index) else { continue }
            batch.setValue(
                json == .null ? nil : try value(json, for: attribute, in: entity), of: object, attribute: index)
        }
        let attributes = entity.attributes.count
        for (index, relationship) in entity.relationships.enumerated() {
            guard let json = fields(attributes + index) else { continue }
            try applyRelationship(
                relationship, index: index, destination: plan.destinations[index], json, of: entity, to: object,
                in: &batch)
        }
        // A nested object that carries nothing but its key refers to an object the store may have: the root finds
        // it, or refuses the save naming what a new one lacks.
        if nested, let key = plan.key, batch.setsOnly(key, of: object) { return object }
        for index in plan.required where batch.value(of: object, attribute: index) == nil {
            throw FieldError(
                message: "'\(entity.name)' is missing required attribute '\(entity.attributes[index].name)'")
        }
        return object
    }

    private func applyRelationship(
        _ relationship: Relationship, index: Int, destination: Int, _ json: JSONValue, of entity: Entity,
        to object: Int, in batch: inout ImportChunk
    ) throws {
        // Built only for an error: interpolated for every value, it would cost every row strings it almost never
        // needs.
        var label: String { "'\(entity.name).\(relationship.name)'" }
        if relationship.isToMany {
            guard case .array(let items) = json else {
                throw FieldError(
                    message: "\(label) is a to-many relationship: expected an array of objects, got \(json.kindName)")
            }
            var targets: [Int] = []
            targets.reserveCapacity(items.count)
            for item in items {
                guard case .object(let fields) = item else {
                    throw FieldError(message: "\(label) items must be objects, got \(item.kindName)")
                }
                targets.append(try apply(fields, of: destination, to: &batch, nested: true))
            }
            batch.setDestinations(targets, of: object, relationship: index)
        } else {
            switch json {
            case .null: batch.setDestination(nil, of: object, relationship: index)
            case .object(let fields):
                let target = try apply(fields, of: destination, to: &batch, nested: true)
                batch.setDestination(target, of: object, relationship: index)
            default:
                throw FieldError(message: "\(label) is a to-one relationship: expected an object, got \(json.kindName)")
            }
        }
    }

    private func value(_ json: JSONValue, for attribute: Attribute, in entity: Entity) throws -> AttributeValue {
        var label: String { "'\(entity.name).\(attribute.name)'" }
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
            guard
                let date = ISO8601Seconds.date(text) ?? (try? Self.iso.parse(text))
                    ?? (try? Self.isoWithFraction.parse(text))
            else {
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
