import GRDB
import TributaryCore

/// The store's index of each relationship by destination, in two halves: a large one, folded, and a small one of
/// the entries written since the last fold, which the writer moves into the large one in key order once enough
/// gathered (``fold(_:in:)``).
///
/// A SQLite index on a to-one column or on a join table's `destination` takes a bulk import's entries at one
/// insertion point per destination (each author's pull requests are all over the store): every commit would rewrite
/// a page of the index for nearly every entry, and the more the store holds, the more distinct pages that is, so a
/// row would cost more the larger the store (see docs/benchmarks.md, 'Scaling'). The recent half stays small enough
/// for the writer's cache; a fold writes each page of the large half once for hundreds of thousands of entries.
///
/// Triggers keep both halves exact in the transaction of every change (insert, update of a to-one, delete; on an
/// entity table for its to-one relationships, on a join table for its rows): whatever writes the tables (the
/// merger, a delete rule, an upgrade, a migration) keeps the index, and an entry is in exactly one half. Readers by
/// destination read both halves (``SQLText/inverseSources(_:_:destination:)``): a delete's clearing of the
/// references to the deleted object, and a predicate comparing a to-one relationship with an object.
enum InverseIndex {
    /// Creates relationship `relationship`'s two halves, the folded one filled with what the store holds (nothing
    /// for a new relationship), in key order.
    /// - Returns: the entries filled.
    @discardableResult
    static func create(_ relationship: Relationship, of entity: Entity, in db: Database) throws -> Int {
        for table in halves(entity, relationship) {
            try db.execute(
                sql: """
                    CREATE TABLE \(table) (destination INTEGER NOT NULL, source INTEGER NOT NULL,
                        PRIMARY KEY (destination, source)) WITHOUT ROWID
                    """)
        }
        let rows =
            relationship.isToMany
            ? "SELECT destination, source FROM \(SQLText.quote(SQLText.joinTable(entity.name, relationship.name)))"
            : """
            SELECT \(SQLText.quote(relationship.name)), \(SQLText.rowKey) FROM \(SQLText.quote(entity.name))
            WHERE \(SQLText.quote(relationship.name)) IS NOT NULL
            """
        try db.execute(
            sql: "INSERT INTO \(halves(entity, relationship)[0]) (destination, source) \(rows) ORDER BY 1, 2")
        return db.changesCount
    }

    /// (Re)creates the triggers that keep the inverse index of `entity`'s relationships: on its table for its to-one
    /// relationships, on each join table for its to-many ones.
    static func createTriggers(for entity: Entity, in db: Database) throws {
        let table = SQLText.quote(entity.name)
        let key = SQLText.rowKey
        for event in ["insert", "delete"] {
            try db.execute(sql: "DROP TRIGGER IF EXISTS \(trigger(event, entity.name))")
        }
        let toOne = entity.relationships.filter { !$0.isToMany }
        for relationship in entity.relationships {
            try db.execute(sql: "DROP TRIGGER IF EXISTS \(trigger("update", "\(entity.name).\(relationship.name)"))")
        }
        if !toOne.isEmpty {
            let inserts = toOne.map { relationship in
                let column = "NEW.\(SQLText.quote(relationship.name))"
                return "INSERT INTO \(recent(entity, relationship)) (destination, source) "
                    + "SELECT \(column), NEW.\(key) WHERE \(column) IS NOT NULL;"
            }
            try db.execute(
                sql: "CREATE TRIGGER \(trigger("insert", entity.name)) AFTER INSERT ON \(table) BEGIN "
                    + inserts.joined(separator: " ") + " END")
            let deletes = toOne.map { relationship in
                removal(
                    entity, relationship, destination: "OLD.\(SQLText.quote(relationship.name))", source: "OLD.\(key)")
            }
            try db.execute(
                sql: "CREATE TRIGGER \(trigger("delete", entity.name)) AFTER DELETE ON \(table) BEGIN "
                    + deletes.joined(separator: " ") + " END")
            for relationship in toOne {
                let column = SQLText.quote(relationship.name)
                try db.execute(
                    sql: """
                        CREATE TRIGGER \(trigger("update", "\(entity.name).\(relationship.name)"))
                        AFTER UPDATE OF \(column) ON \(table) WHEN OLD.\(column) IS NOT NEW.\(column) BEGIN
                        \(removal(entity, relationship, destination: "OLD.\(column)", source: "OLD.\(key)"))
                        INSERT INTO \(recent(entity, relationship)) (destination, source)
                        SELECT NEW.\(column), NEW.\(key) WHERE NEW.\(column) IS NOT NULL;
                        END
                        """)
            }
        }
        for relationship in entity.relationships where relationship.isToMany {
            let join = SQLText.quote(SQLText.joinTable(entity.name, relationship.name))
            let name = "\(entity.name).\(relationship.name)"
            try db.execute(sql: "DROP TRIGGER IF EXISTS \(trigger("insert", name))")
            try db.execute(sql: "DROP TRIGGER IF EXISTS \(trigger("delete", name))")
            try db.execute(
                sql: """
                    CREATE TRIGGER \(trigger("insert", name)) AFTER INSERT ON \(join) BEGIN
                    INSERT INTO \(recent(entity, relationship)) (destination, source) VALUES (NEW.destination, NEW.source);
                    END
                    """)
            try db.execute(
                sql: """
                    CREATE TRIGGER \(trigger("delete", name)) AFTER DELETE ON \(join) BEGIN
                    \(removal(entity, relationship, destination: "OLD.destination", source: "OLD.source"))
                    END
                    """)
        }
    }

    /// Moves every recent entry of `model`'s relationships into the folded half, in key order, inside the caller's
    /// transaction.
    static func fold(_ model: Model, in db: Database) throws {
        for entity in model.entities {
            for relationship in entity.relationships {
                let tables = halves(entity, relationship)
                let (folded, recent) = (tables[0], tables[1])
                try db.execute(
                    sql:
                        "INSERT OR IGNORE INTO \(folded) (destination, source) SELECT destination, source FROM \(recent)"
                )
                try db.execute(sql: "DELETE FROM \(recent)")
            }
        }
    }

    /// The entries waiting in the recent halves of `model`'s relationships.
    static func recentEntries(_ model: Model, in db: Database) throws -> Int {
        var count = 0
        for entity in model.entities {
            for relationship in entity.relationships {
                count += try Int.fetchOne(db, sql: "SELECT count(*) FROM \(recent(entity, relationship))") ?? 0
            }
        }
        return count
    }

    /// The relationship's two tables, quoted: the folded half, then the recent one.
    private static func halves(_ entity: Entity, _ relationship: Relationship) -> [String] {
        [
            SQLText.inverseTable(entity.name, relationship.name),
            SQLText.recentInverseTable(entity.name, relationship.name),
        ].map(SQLText.quote)
    }

    private static func recent(_ entity: Entity, _ relationship: Relationship) -> String {
        halves(entity, relationship)[1]
    }

    /// The statements that take entry (destination, source) out of whichever half holds it.
    private static func removal(
        _ entity: Entity, _ relationship: Relationship, destination: String, source: String
    ) -> String {
        halves(entity, relationship).map {
            "DELETE FROM \($0) WHERE destination = \(destination) AND source = \(source);"
        }.joined(separator: " ")
    }

    /// A trigger's name: `tributary_inverse_<event>:<table>` (`.`-separated for a relationship).
    private static func trigger(_ event: String, _ owner: String) -> String {
        SQLText.quote("tributary_inverse_\(event):\(owner)")
    }
}
