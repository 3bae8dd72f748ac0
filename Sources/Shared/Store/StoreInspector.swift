import Foundation
import GRDB

/// A read-only look at a store file from outside the coordinator: row counts per entity.
public enum StoreInspector {
    /// The number of rows of each entity's table, by entity name.
    public static func rowCounts(path: String, model: Model) throws -> [String: Int] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var counts: [String: Int] = [:]
            for entity in model.entities {
                counts[entity.name] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(SQL.quote(entity.name))") ?? 0
            }
            return counts
        }
    }
}
