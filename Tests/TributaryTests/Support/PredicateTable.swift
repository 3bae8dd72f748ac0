import Foundation
import GRDB

@testable import TributaryCoordinator
@testable import TributaryCore

/// One object of the predicate tests' table: what SQLite holds, and what in-memory evaluation reads.
struct PredicateRow: Sendable {
    let id: UUID
    /// By attribute index of `PredicateTable.pullRequest`.
    var values: [AttributeValue?]
    /// By relationship index: the author, then nil for the to-many `reviewers`.
    var toOne: [UUID?]
}

/// A `PullRequest` table laid out by `Schema` in an in-memory SQLite database with the predicate functions
/// registered, holding `rows`; for checking that compiled SQL and in-memory evaluation agree.
struct PredicateTable {
    static let model: Model = {
        // A fixed, valid model: failing here would be a bug in the test itself.
        try! Model(entities: [
            Entity(name: "User", attributes: [Attribute(name: "login", type: .string)]),
            Entity(
                name: "PullRequest",
                attributes: [
                    Attribute(name: "title", type: .string, isOptional: true),
                    Attribute(name: "state", type: .string, isOptional: true),
                    Attribute(name: "additions", type: .int, isOptional: true),
                    Attribute(name: "score", type: .double, isOptional: true),
                    Attribute(name: "created", type: .date, isOptional: true),
                    Attribute(name: "merged", type: .bool, isOptional: true),
                    Attribute(name: "patch", type: .data, isOptional: true),
                    Attribute(name: "token", type: .uuid, isOptional: true),
                ],
                relationships: [
                    Relationship(name: "author", destination: "User"),
                    Relationship(name: "reviewers", destination: "User", isToMany: true),
                ]),
        ])
    }()

    static var pullRequest: Entity { model.entities[1] }

    let database: DatabaseQueue
    let rows: [PredicateRow]

    init(rows: [PredicateRow]) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in FetchPredicate.registerSQLFunctions(in: db) }
        database = try DatabaseQueue(configuration: configuration)
        self.rows = rows
        try database.write { db in
            for entity in Self.model.entities { try Schema.create(entity, in: db) }
            for (index, user) in PredicateSamples.users.enumerated() {
                try db.execute(
                    sql: "INSERT INTO \"User\" (\"id\", \"login\") VALUES (?, ?)",
                    arguments: [user.bytes, "user\(index)"])
            }
            for row in rows { try Self.insert(row, into: db) }
        }
    }

    /// Inserts a row as the store writes it: strings with every byte (NUL included), dates as seconds since 1970,
    /// bools as 0/1, uuids as 16-byte blobs, to-one relationships as their destination's row key (the sample
    /// users are in the `User` table).
    static func insert(_ row: PredicateRow, into db: Database) throws {
        let entity = pullRequest
        var names = [SQLText.quote("id")]
        var operands = ["?"]
        var arguments: [DatabaseValue] = [row.id.bytes.databaseValue]
        for (index, attribute) in entity.attributes.enumerated() {
            names.append(SQLText.quote(attribute.name))
            let (operand, value) = bound(index < row.values.count ? row.values[index] : nil)
            operands.append(operand)
            arguments.append(value)
        }
        for (index, relationship) in entity.relationships.enumerated() where !relationship.isToMany {
            // The column holds the destination's row key.
            names.append(SQLText.quote(relationship.name))
            operands.append("(SELECT \"_rowid\" FROM \(SQLText.quote(relationship.destination)) WHERE \"id\" = ?)")
            let id = index < row.toOne.count ? row.toOne[index] : nil
            arguments.append(id.map { $0.bytes.databaseValue } ?? .null)
        }
        try db.execute(
            sql: "INSERT INTO \(SQLText.quote(entity.name)) (\(names.joined(separator: ", "))) VALUES "
                + "(\(operands.joined(separator: ", ")))",
            arguments: StatementArguments(arguments))
    }

    private static func bound(_ value: AttributeValue?) -> (String, DatabaseValue) {
        switch value {
        case nil: ("?", .null)
        case .string(let string) where string.utf8.contains(0): ("CAST(? AS TEXT)", Data(string.utf8).databaseValue)
        case .string(let string): ("?", string.databaseValue)
        case .int(let integer): ("?", integer.databaseValue)
        case .double(let double): ("?", double.databaseValue)
        case .bool(let bool): ("?", (bool ? 1 : 0).databaseValue)
        case .date(let date): ("?", date.timeIntervalSince1970.databaseValue)
        case .data(let data) where data.isEmpty: ("CAST(? AS BLOB)", "".databaseValue)
        case .data(let data): ("?", data.databaseValue)
        case .uuid(let uuid): ("?", uuid.bytes.databaseValue)
        }
    }

    /// The ids SQLite returns for `WHERE <predicate> ORDER BY <sort>`.
    func sqlIDs(_ predicate: CompiledPredicate?, _ sort: CompiledSort? = nil) throws -> [UUID] {
        let table = SQLText.quote(Self.pullRequest.name)
        var sql = "SELECT id FROM \(table)"
        if let predicate { sql += " WHERE \(predicate.sql)" }
        if let sort { sql += " ORDER BY \(sort.sql)" }
        let arguments = StatementArguments((predicate?.arguments ?? []).map(\.databaseValue))
        return try database.read { db in
            try Data.fetchAll(db, sql: sql, arguments: arguments).map { UUID(bytes: $0, at: $0.startIndex) }
        }
    }

    /// The ids in-memory evaluation gives, in row order.
    func memoryIDs(_ predicate: CompiledPredicate) -> [UUID] {
        rows.filter { predicate.evaluate(values: $0.values, toOne: $0.toOne) }.map(\.id)
    }

    /// The ids of every row in the in-memory order.
    func memoryOrder(_ sort: CompiledSort) -> [UUID] {
        rows.sorted { sort.areInIncreasingOrder(($0.id, $0.values, $0.toOne), ($1.id, $1.values, $1.toOne)) }
            .map(\.id)
    }

    /// Whether the table still exists with all its rows.
    func rowCount() throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(SQLText.quote(Self.pullRequest.name))") ?? -1
        }
    }
}

/// A small deterministic generator (SplitMix64), so generated rows are the same on every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The values the generated rows draw from, and predicates use, so comparisons find some rows but not all.
enum PredicateSamples {
    static let hostile = [
        "x'; DROP TABLE \"PullRequest\"; --", "\" OR 1=1 --", ");", "' OR '1'='1", "title\" = \"title",
        "?", "%@", "*", "\\", "\\'", "a\0b", "\0", "🎉 emoji", "שלום עולם", "\u{202E}rtl override", "e\u{301}",
        "\u{301}leading combining mark",
    ]
    static let titles =
        hostile + [
            "", "a", "A", "ab", "abc", "Straße", "STRASSE", "strasse", "é", "É", "wip: fix", "WIP: Fix", "ǅ", "ΣΑΣ",
            "σας", "abc*?", "100%", "_under", "zzz", "Zebra", "mañana",
        ]
    static let states = ["open", "Open", "OPEN", "closed", "merged", "ouvert"]
    static let integers: [Int64] = [-3, -1, 0, 1, 2, 3, 5, 10, 11, 20, Int64.max, Int64.min]
    static let doubles: [Double] = [
        -2.5, -0.0, 0.0, 0.5, 1, 3, 3.5, 0.1 + 0.2, 0.3, 1e300, -1e300, .infinity, -.infinity, .nan,
        9_007_199_254_740_992,
    ]
    static let dates: [Date] = [
        Date(timeIntervalSince1970: 1_700_000_000), Date(timeIntervalSince1970: 1_700_003_600.25),
        Date(timeIntervalSince1970: 1_700_007_200), Date(timeIntervalSince1970: -1_000_000_000),
        Date(timeIntervalSince1970: 0),
    ]
    static let blobs = [
        Data(), Data([0]), Data([0x80]), Data([1, 2]), Data([1, 2, 3]), Data([0xFF]), Data("abc".utf8),
    ]
    static let tokens = (1...5).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)")! }
    static let users = [
        UUID(uuidString: "10000000-0000-0000-0000-000000000000")!,
        UUID(uuidString: "20000000-0000-0000-0000-000000000000")!,
        UUID(uuidString: "80000000-0000-0000-0000-000000000000")!,
        UUID(uuidString: "FF000000-0000-0000-0000-000000000000")!,
    ]

    /// `count` rows with every attribute NULL about a fifth of the time.
    static func rows(count: Int, seed: UInt64 = 42) -> [PredicateRow] {
        var random = SeededGenerator(seed: seed)
        func maybe(_ make: () -> AttributeValue) -> AttributeValue? {
            Int.random(in: 0..<5, using: &random) == 0 ? nil : make()
        }
        return (0..<count).map { index in
            var idBytes = Data(repeating: 0, count: 16)
            idBytes[0] = UInt8(truncatingIfNeeded: UInt64.random(in: 0...255, using: &random))
            idBytes[14] = UInt8(index >> 8)
            idBytes[15] = UInt8(index & 0xFF)
            let values: [AttributeValue?] = [
                maybe { .string(titles.randomElement(using: &random)!) },
                maybe { .string(states.randomElement(using: &random)!) },
                maybe { .int(integers.randomElement(using: &random)!) },
                maybe { .double(doubles.randomElement(using: &random)!) },
                maybe { .date(dates.randomElement(using: &random)!) },
                maybe { .bool(Bool.random(using: &random)) },
                maybe { .data(blobs.randomElement(using: &random)!) },
                maybe { .uuid(tokens.randomElement(using: &random)!) },
            ]
            let author = Int.random(in: 0..<5, using: &random) == 0 ? nil : users.randomElement(using: &random)
            return PredicateRow(id: UUID(bytes: idBytes, at: idBytes.startIndex), values: values, toOne: [author, nil])
        }
    }
}
