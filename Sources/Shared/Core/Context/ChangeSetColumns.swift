import Foundation
import TributaryProtocol

/// The wire columns of a change set's batches, built from row accessors: shared by ``ChangeSetBuilder`` (rows are
/// a context's objects) and ``ImportChunk`` (rows are an import's objects).
enum ChangeSetColumns {
    /// An attribute's column: its values in the array of the attribute's wire type, nulls in the bitmap.
    static func attribute(_ attribute: Attribute, rows: Int, value: (Int) -> AttributeValue?) -> Tributary_V1_Column {
        var column = Tributary_V1_Column()
        column.name = attribute.name
        var nulls = NullBitmap(rows: rows)
        switch attribute.type {
        case .int, .bool:
            column.ints = (0..<rows).map { row in
                switch value(row) {
                case .int(let value): return value
                case .bool(let value): return value ? 1 : 0
                default:
                    nulls.set(row)
                    return 0
                }
            }
        case .double, .date:
            column.doubles = (0..<rows).map { row in
                switch value(row) {
                case .double(let value): return value
                case .date(let value): return value.timeIntervalSince1970
                default:
                    nulls.set(row)
                    return 0
                }
            }
        case .string:
            column.strings = (0..<rows).map { row in
                if case .string(let value) = value(row) { return value }
                nulls.set(row)
                return ""
            }
        case .data:
            column.blobs = (0..<rows).map { row in
                if case .data(let value) = value(row) { return value }
                nulls.set(row)
                return Data()
            }
        case .uuid:
            column.fixed16 = fixed16(rows: rows, nulls: &nulls) { row in
                if case .uuid(let value) = value(row) { return value }
                return nil
            }
        }
        column.nulls = nulls.data
        return column
    }

    /// A to-one relationship's column: 16 bytes per row, nulls in the bitmap.
    static func toOne(_ name: String, rows: Int, destination: (Int) -> UUID?) -> Tributary_V1_Column {
        var column = Tributary_V1_Column()
        column.name = name
        var nulls = NullBitmap(rows: rows)
        column.fixed16 = fixed16(rows: rows, nulls: &nulls, destination)
        column.nulls = nulls.data
        return column
    }

    /// A to-many relationship's column: each row's count, and their destinations' 16 bytes one after another.
    static func toMany(_ name: String, rows: Int, destinations: (Int) -> [UUID]) -> Tributary_V1_Column {
        var column = Tributary_V1_Column()
        column.name = name
        var bytes = Data()
        column.counts = (0..<rows).map { row in
            let ids = destinations(row)
            for id in ids { id.append(to: &bytes) }
            return UInt32(ids.count)
        }
        column.fixed16 = bytes
        return column
    }

    /// 16 bytes per row (a null row as 16 zero bytes, marked in `nulls`).
    private static func fixed16(rows: Int, nulls: inout NullBitmap, _ value: (Int) -> UUID?) -> Data {
        var bytes = Data(capacity: rows * 16)
        for row in 0..<rows {
            if let id = value(row) {
                id.append(to: &bytes)
            } else {
                nulls.set(row)
                bytes.append(contentsOf: NullBitmap.zeroID)
            }
        }
        return bytes
    }
}
