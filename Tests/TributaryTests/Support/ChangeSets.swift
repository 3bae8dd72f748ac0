import Foundation

@testable import TributaryCore
@testable import TributaryProtocol

extension Tributary_V1_EntityBatch {
    /// An insert of one object of `entity` (a new id unless `id` names one) with one string attribute set: the
    /// smallest real change set.
    static func inserting(_ entity: String, _ attribute: String, _ value: String, id: UUID = UUID())
        -> Tributary_V1_EntityBatch
    {
        .with {
            $0.entity = entity
            $0.operation = .insert
            $0.ids = id.bytes
            $0.columns = [
                .with {
                    $0.name = attribute; $0.strings = [value]
                }
            ]
        }
    }

    /// An insert of objects of `entity` with the given ids and columns.
    static func inserting(_ entity: String, ids: [UUID], _ columns: [Tributary_V1_Column]) -> Tributary_V1_EntityBatch {
        .with {
            $0.entity = entity
            $0.operation = .insert
            $0.ids = ids.reduce(into: Data()) { $1.append(to: &$0) }
            $0.columns = columns
        }
    }
}

extension Tributary_V1_Column {
    /// A string column (nil: a null row).
    static func strings(_ name: String, _ values: [String?]) -> Tributary_V1_Column {
        var nulls = NullBitmap(rows: values.count)
        for (row, value) in values.enumerated() where value == nil { nulls.set(row) }
        return .with {
            $0.name = name
            $0.strings = values.map { $0 ?? "" }
            if values.contains(nil) { $0.nulls = nulls.data }
        }
    }

    /// A to-one column pointing each row at an object.
    static func references(_ name: String, _ ids: [UUID]) -> Tributary_V1_Column {
        .with {
            $0.name = name
            $0.fixed16 = ids.reduce(into: Data()) { $1.append(to: &$0) }
        }
    }

    /// A to-many column: each row's destinations.
    static func destinations(_ name: String, _ rows: [[UUID]]) -> Tributary_V1_Column {
        .with {
            $0.name = name
            $0.fixed16 = rows.joined().reduce(into: Data()) { $1.append(to: &$0) }
            $0.counts = rows.map { UInt32($0.count) }
        }
    }
}
