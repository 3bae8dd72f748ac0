import GRDB
import TributaryCore

/// The secondary indexes a model declares (`"indexes"` of an entity, docs/model.md): created and dropped as the model
/// says each time the store opens, inside the opening transaction.
extension Schema {
    /// The name of the index of `entity` over `columns`: `PullRequest_index(state,author)`. The columns are in the
    /// name, so an index listed anew in another order is another index, and the names of two entities' indexes never
    /// meet.
    static func declaredIndexName(_ entity: String, _ columns: [String]) -> String {
        "\(entity)_index(\(columns.joined(separator: ",")))"
    }

    /// Creates the indexes `model` declares that the store lacks (filled from what the tables hold), and drops the
    /// declared indexes it no longer declares. Indexes of Tributary's own (uniqueness, the inverse index) are left
    /// alone.
    /// - Returns: the names of the indexes created and dropped.
    static func reconcileDeclaredIndexes(of model: Model, in db: Database) throws -> (
        created: [String], dropped: [String]
    ) {
        var created: [String] = []
        var dropped: [String] = []
        for entity in model.entities {
            let prefix = "\(entity.name)_index("
            let existing = Set(
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND substr(name, 1, ?) = ?",
                    arguments: [entity.name, prefix.count, prefix]))
            let wanted = Dictionary(
                uniqueKeysWithValues: entity.indexes.map { (declaredIndexName(entity.name, $0), $0) })
            for name in existing.subtracting(wanted.keys).sorted() {
                try db.execute(sql: "DROP INDEX \(SQLText.quote(name))")
                dropped.append(name)
            }
            for (name, columns) in wanted.sorted(by: { $0.key < $1.key }) where !existing.contains(name) {
                let list = columns.map(SQLText.quote).joined(separator: ", ")
                try db.execute(sql: "CREATE INDEX \(SQLText.quote(name)) ON \(SQLText.quote(entity.name))(\(list))")
                created.append(name)
            }
        }
        return (created, dropped)
    }
}
