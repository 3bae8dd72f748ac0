import Foundation
import TributaryProtocol

/// One validated column of an entity batch, with its values hoisted out of the protobuf message so the merge
/// loop reads plain arrays.
package struct ColumnReader {
    package enum Values {
        case ints([Int64])
        case doubles([Double])
        case strings([String])
        case blobs([Data])
        case fixed16(Data)
        case toMany(counts: [UInt32], ids: Data, offsets: [Int])
    }

    package enum Target {
        case attribute(Attribute)
        case toOne(Relationship)
        case toMany(Relationship)
    }

    package let name: String
    package let target: Target
    package let values: Values
    let nulls: Data

    /// Whether row `row` is null.
    @inline(__always)
    package func isNull(_ row: Int) -> Bool { NullBitmap.isNull(nulls, row: row) }

    /// Row `row`'s value as an attribute value (a to-one relationship's destination as `.uuid`); nil for NULL and
    /// for to-many columns.
    package func value(_ row: Int) -> AttributeValue? {
        guard !isNull(row) else { return nil }
        let type: AttributeType
        switch target {
        case .attribute(let attribute): type = attribute.type
        case .toOne: type = .uuid
        case .toMany: return nil
        }
        switch (type, values) {
        case (.bool, .ints(let ints)): return .bool(ints[row] != 0)
        case (_, .ints(let ints)): return .int(ints[row])
        case (.date, .doubles(let doubles)): return .date(Date(timeIntervalSince1970: doubles[row]))
        case (_, .doubles(let doubles)): return .double(doubles[row])
        case (_, .strings(let strings)): return .string(strings[row])
        case (_, .blobs(let blobs)): return .data(blobs[row])
        case (_, .fixed16(let bytes)): return .uuid(UUID(bytes: bytes, at: bytes.startIndex + row * 16))
        case (_, .toMany): return nil
        }
    }

    /// Row `row`'s destination ids of a to-many column, in order; empty for other columns.
    package func destinations(_ row: Int) -> [UUID] {
        guard case .toMany(_, let ids, let offsets) = values else { return [] }
        return (offsets[row]..<offsets[row + 1]).map { UUID(bytes: ids, at: ids.startIndex + $0 * 16) }
    }

    /// Validates a wire column against the entity and the batch's row count.
    package init(_ column: Tributary_V1_Column, entity: Entity, rows: Int) throws {
        name = column.name
        nulls = column.nulls
        if let attribute = entity.attribute(named: column.name) {
            target = .attribute(attribute)
            values = try Self.attributeValues(column, attribute: attribute, entity: entity, rows: rows)
        } else if let relationship = entity.relationship(named: column.name) {
            if relationship.isToMany {
                target = .toMany(relationship)
                values = try Self.toManyValues(column, entity: entity, rows: rows)
            } else {
                target = .toOne(relationship)
                try Self.expect(column.fixed16.count, rows * 16, "16-byte ids", column, entity)
                values = .fixed16(column.fixed16)
            }
        } else {
            throw StoreError(
                .unknownAttribute, "entity '\(entity.name)' has no attribute or relationship '\(column.name)'")
        }
        if !nulls.isEmpty && nulls.count < (rows + 7) / 8 {
            throw StoreError(
                .wrongType, "column '\(entity.name).\(column.name)' has a null bitmap shorter than its \(rows) rows")
        }
    }

    private static func attributeValues(
        _ column: Tributary_V1_Column, attribute: Attribute, entity: Entity, rows: Int
    ) throws -> Values {
        let type = attribute.type.rawValue
        switch attribute.type {
        case .int, .bool:
            try expect(column.ints.count, rows, "ints for \(type)", column, entity)
            return .ints(column.ints)
        case .double, .date:
            try expect(column.doubles.count, rows, "doubles for \(type)", column, entity)
            return .doubles(column.doubles)
        case .string:
            try expect(column.strings.count, rows, "strings", column, entity)
            return .strings(column.strings)
        case .data:
            try expect(column.blobs.count, rows, "blobs", column, entity)
            return .blobs(column.blobs)
        case .uuid:
            try expect(column.fixed16.count, rows * 16, "16-byte uuids", column, entity)
            return .fixed16(column.fixed16)
        }
    }

    private static func toManyValues(_ column: Tributary_V1_Column, entity: Entity, rows: Int) throws -> Values {
        try expect(column.counts.count, rows, "counts", column, entity)
        var offsets = [Int]()
        offsets.reserveCapacity(rows + 1)
        var total = 0
        for count in column.counts {
            offsets.append(total)
            total += Int(count)
        }
        offsets.append(total)
        try expect(column.fixed16.count, total * 16, "bytes of ids (16 per id)", column, entity)
        return .toMany(counts: column.counts, ids: column.fixed16, offsets: offsets)
    }

    private static func expect(
        _ actual: Int, _ expected: Int, _ what: String, _ column: Tributary_V1_Column, _ entity: Entity
    ) throws {
        guard actual == expected else {
            throw StoreError(
                .wrongType,
                "column '\(entity.name).\(column.name)' carries \(actual) \(what) where \(expected) were expected")
        }
    }
}
