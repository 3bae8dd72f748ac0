import Foundation
import GRDB

@testable import TributaryCoordinator
@testable import TributaryCore

/// Teams, users and pull requests related every way a model can relate them (to-one, to-many, a to-many of an
/// entity to itself), laid out by `Schema` in an in-memory SQLite database with the predicate functions registered;
/// for checking that key-path predicates compiled to SQL agree with in-memory evaluation.
struct GraphTable: PredicateResolver {
    static let model: Model = {
        // A fixed, valid model: failing here would be a bug in the test itself.
        try! Model(entities: [
            Entity(name: "Team", attributes: [Attribute(name: "name", type: .string, isOptional: true)]),
            Entity(
                name: "User",
                attributes: [
                    Attribute(name: "login", type: .string),
                    Attribute(name: "name", type: .string, isOptional: true),
                    Attribute(name: "karma", type: .int, isOptional: true),
                ],
                relationships: [
                    Relationship(name: "team", destination: "Team"),
                    Relationship(name: "followers", destination: "User", isToMany: true),
                ]),
            Entity(
                name: "PullRequest",
                attributes: [
                    Attribute(name: "title", type: .string, isOptional: true),
                    Attribute(name: "additions", type: .int, isOptional: true),
                ],
                relationships: [
                    Relationship(name: "author", destination: "User"),
                    Relationship(name: "reviewers", destination: "User", isToMany: true),
                ]),
        ])
    }()

    static var pullRequest: Entity { model.entity(named: "PullRequest")! }

    /// An object of any of the entities.
    struct Object {
        let entity: String
        let subject: PredicateSubject
    }

    /// Logins and names: hostile strings, and strings that differ only by case or diacritics.
    static let strings =
        PredicateSamples.hostile + [
            "ada", "Ada", "ADA", "adá", "José", "jose", "JOSÉ", "Jöse", "grace", "Grâce", "linus", "Straße", "strasse",
            "core", "Core team", "Équipe", "equipe", "", "zz",
        ]

    static let logins = ["ada", "Ada", "adá", "JOSÉ", "grace", "Grâce"]
    static let teamNames = ["", "Équipe", "Core team", "core"]

    let database: DatabaseQueue
    let objects: [UUID: Object]
    let teams: [UUID]
    let users: [UUID]
    let pullRequests: [UUID]

    /// A random graph from `seed`: 6 teams, 30 users, `pullRequests` pull requests.
    init(seed: UInt64, pullRequests count: Int) throws {
        var random = SeededGenerator(seed: seed)
        func id() -> UUID {
            var bytes = [UInt8](repeating: 0, count: 16)
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &random) }
            return UUID(bytes: Data(bytes), at: 0)
        }
        func string() -> String { Self.strings.randomElement(using: &random)! }
        var objects: [UUID: Object] = [:]
        let teams = (0..<6).map { _ in id() }
        for (index, team) in teams.enumerated() {
            // One team without a name.
            objects[team] = Object(
                entity: "Team",
                subject: PredicateSubject(
                    id: team, values: [index == 0 ? nil : .string(index < 4 ? Self.teamNames[index] : string())],
                    toOne: [], toMany: []))
        }
        let users = (0..<30).map { _ in id() }
        for (index, user) in users.enumerated() {
            let followers = (0..<Int.random(in: 0...4, using: &random)).map { _ in users.randomElement(using: &random)!
            }
            objects[user] = Object(
                entity: "User",
                subject: PredicateSubject(
                    id: user,
                    values: [
                        // The first few users have logins and names the hand-picked predicates look for.
                        .string(index < Self.logins.count ? Self.logins[index] : string()),
                        index == 0 ? .string("ada") : Bool.random(using: &random) ? .string(string()) : nil,
                        Bool.random(using: &random) ? .int(Int64.random(in: -2...5, using: &random)) : nil,
                    ],
                    toOne: [
                        Int.random(in: 0..<4, using: &random) == 0 ? nil : teams.randomElement(using: &random)!, nil,
                    ],
                    toMany: [[], Array(Set(followers))]))
        }
        let pullRequests = (0..<count).map { _ in id() }
        for pullRequest in pullRequests {
            let reviewers = (0..<Int.random(in: 0...4, using: &random)).map { _ in users.randomElement(using: &random)!
            }
            objects[pullRequest] = Object(
                entity: "PullRequest",
                subject: PredicateSubject(
                    id: pullRequest,
                    values: [
                        Bool.random(using: &random) ? .string(string()) : nil,
                        .int(Int64.random(in: 0...100, using: &random)),
                    ],
                    toOne: [
                        Int.random(in: 0..<6, using: &random) == 0 ? nil : users.randomElement(using: &random)!, nil,
                    ],
                    toMany: [[], Array(Set(reviewers))]))
        }
        self.objects = objects
        self.teams = teams
        self.users = users
        self.pullRequests = pullRequests
        var configuration = Configuration()
        configuration.prepareDatabase { db in FetchPredicate.registerSQLFunctions(in: db) }
        database = try DatabaseQueue(configuration: configuration)
        let order = teams + users + pullRequests
        try database.write { db in
            for entity in Self.model.entities { try Schema.create(entity, in: db) }
            for id in order { try Self.insertRow(objects[id]!, in: db) }
            for id in order { try Self.insertLinks(objects[id]!, in: db) }
        }
    }

    private static func insertRow(_ object: Object, in db: Database) throws {
        let entity = model.entity(named: object.entity)!
        var names = [SQLText.quote("id")]
        var arguments: [DatabaseValue] = [object.subject.id.bytes.databaseValue]
        for (index, attribute) in entity.attributes.enumerated() {
            names.append(SQLText.quote(attribute.name))
            switch object.subject.values[index] {
            case .string(let string): arguments.append(Data(string.utf8).databaseValue)
            case .int(let integer): arguments.append(integer.databaseValue)
            default: arguments.append(.null)
            }
        }
        // Strings are bound as blobs (GRDB would cut text at a NUL) and cast back to text.
        let operands = entity.attributes.map { $0.type == .string ? "CAST(? AS TEXT)" : "?" }
        try db.execute(
            sql: "INSERT INTO \(SQLText.quote(entity.name)) (\(names.joined(separator: ", "))) VALUES "
                + "(?, \(operands.joined(separator: ", ")))",
            arguments: StatementArguments(arguments))
    }

    /// Sets to-one columns to their destinations' row keys and writes join rows, as the store does.
    private static func insertLinks(_ object: Object, in db: Database) throws {
        let entity = model.entity(named: object.entity)!
        let table = SQLText.quote(entity.name)
        for (index, relationship) in entity.relationships.enumerated() {
            let destination = SQLText.quote(relationship.destination)
            if relationship.isToMany {
                for target in object.subject.toMany[index] {
                    try db.execute(
                        sql: """
                            INSERT INTO \(SQLText.quote(SQLText.joinTable(entity.name, relationship.name)))
                            (source, destination) VALUES ((SELECT "_rowid" FROM \(table) WHERE "id" = ?),
                            (SELECT "_rowid" FROM \(destination) WHERE "id" = ?))
                            """, arguments: [object.subject.id.bytes, target.bytes])
                }
            } else if let target = object.subject.toOne[index] {
                try db.execute(
                    sql: "UPDATE \(table) SET \(SQLText.quote(relationship.name)) = "
                        + "(SELECT \"_rowid\" FROM \(destination) WHERE \"id\" = ?) WHERE \"id\" = ?",
                    arguments: [target.bytes, object.subject.id.bytes])
            }
        }
    }

    func subject(for id: UUID, entity: String) -> PredicateSubject? {
        guard let object = objects[id], object.entity == entity else { return nil }
        return object.subject
    }

    /// The pull requests SQLite selects.
    func sqlIDs(_ predicate: CompiledPredicate) throws -> Set<UUID> {
        try database.read { db in
            Set(
                try Data.fetchAll(
                    db, sql: "SELECT id FROM \"PullRequest\" WHERE \(predicate.sql)",
                    arguments: StatementArguments(predicate.arguments.map(\.databaseValue))
                ).map { UUID(bytes: $0, at: $0.startIndex) })
        }
    }

    /// The pull requests in SQLite's `ORDER BY` order.
    func sqlOrder(_ sort: CompiledSort) throws -> [UUID] {
        try database.read { db in
            try Data.fetchAll(db, sql: "SELECT id FROM \"PullRequest\" ORDER BY \(sort.sql)").map {
                UUID(bytes: $0, at: $0.startIndex)
            }
        }
    }

    /// The pull requests in the in-memory order, following key paths through ``objects``.
    func memoryOrder(_ sort: CompiledSort) -> [UUID] {
        pullRequests.sorted { sort.areInIncreasingOrder(objects[$0]!.subject, objects[$1]!.subject, resolver: self) }
    }

    /// The pull requests in-memory evaluation selects, following key paths through ``objects``.
    func memoryIDs(_ predicate: CompiledPredicate) -> Set<UUID> {
        Set(pullRequests.filter { predicate.evaluate(objects[$0]!.subject, resolver: self) })
    }
}
