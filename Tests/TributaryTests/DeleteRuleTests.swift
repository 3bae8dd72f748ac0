import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// Delete rules applied by the root: cascade, nullify (the default) and deny.
@Suite("Delete rules at the root: cascade, nullify, deny")
struct DeleteRuleTests {
    static let modelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string"}]},
          {"name": "Lock", "attributes": [{"name": "reason", "type": "string"}]},
          {"name": "File", "attributes": [{"name": "path", "type": "string"}],
           "relationships": [{"name": "lock", "destination": "Lock", "deleteRule": "deny"}]},
          {"name": "Folder", "attributes": [{"name": "name", "type": "string"}],
           "relationships": [{"name": "files", "destination": "File", "toMany": true, "deleteRule": "cascade"},
                             {"name": "owner", "destination": "User"}]}]}
        """

    let directory: TemporaryDirectory
    let store: RootStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try RootStore.open(
            path: directory.path("store.sqlite"), model: try Model.decode(Data(Self.modelJSON.utf8)))
    }

    func insert(_ entity: String, _ id: UUID, _ attribute: String, _ value: String, _ links: [Tributary_V1_Column] = [])
        -> Tributary_V1_EntityBatch
    {
        .with {
            $0.entity = entity
            $0.operation = .insert
            $0.ids = id.bytes
            $0.columns =
                [
                    .with {
                        $0.name = attribute; $0.strings = [value]
                    }
                ] + links
        }
    }

    func delete(_ entity: String, _ id: UUID) -> Tributary_V1_EntityBatch {
        .with {
            $0.entity = entity
            $0.operation = .delete
            $0.ids = id.bytes
        }
    }

    func save(_ batches: [Tributary_V1_EntityBatch]) async throws -> SaveOutcome {
        try await store.saves.applySave(.with { $0.changes.batches = batches }, from: "w1")
    }

    func count(_ table: String) async throws -> Int {
        try await DatabaseQueue(path: directory.path("store.sqlite")).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0
        }
    }

    @Test("cascade deletes the destinations, nullify clears references, and the didSave lists every deleted object")
    func cascadeAndNullify() async throws {
        let (user, folder, first, second) = (UUID(), UUID(), UUID(), UUID())
        _ = try await save([
            insert("User", user, "login", "ada"),
            insert("File", first, "path", "/a"), insert("File", second, "path", "/b"),
            insert(
                "Folder", folder, "name", "docs",
                [
                    .with {
                        $0.name = "files"; $0.fixed16 = first.bytes + second.bytes; $0.counts = [2]
                    },
                    .with {
                        $0.name = "owner"; $0.fixed16 = user.bytes
                    },
                ]),
        ])
        guard case .committed(_, let events, _, _) = try await save([delete("Folder", folder)]) else {
            throw TimedOut(what: "the delete to commit")
        }
        let (folders, files, links) = (
            try await count("Folder"), try await count("File"), try await count("Folder_files")
        )
        #expect(folders == 0 && files == 0 && links == 0)
        #expect(try await count("User") == 1, "nullify (the owner's default rule) keeps the user")
        let parts = try events.parts.map { try Tributary_V1_DidSave(serializedBytes: $0.body) }
        let deletedFiles = try #require(parts.first { $0.entity == "File" }?.deletedIds)
        let ids = Set(
            stride(from: 0, to: deletedFiles.count, by: 16).map {
                UUID(bytes: deletedFiles, at: deletedFiles.startIndex + $0)
            })
        #expect(ids == [first, second] && deletedFiles.count == 32)

        // Deleting a user nullifies references to it.
        let other = UUID()
        _ = try await save([
            insert(
                "Folder", other, "name", "mine",
                [
                    .with {
                        $0.name = "owner"; $0.fixed16 = user.bytes
                    }
                ])
        ])
        _ = try await save([delete("User", user)])
        let owner = try await DatabaseQueue(path: directory.path("store.sqlite")).read { db in
            try Row.fetchOne(db, sql: "SELECT owner FROM Folder")?["owner"] as Data?
        }
        let remaining = try await count("Folder")
        #expect(owner == nil && remaining == 1)
    }

    @Test("deny refuses the whole change set, also when reached through a cascade")
    func deny() async throws {
        let (lock, file, folder) = (UUID(), UUID(), UUID())
        _ = try await save([
            insert("Lock", lock, "reason", "legal hold"),
            insert(
                "File", file, "path", "/held",
                [
                    .with {
                        $0.name = "lock"; $0.fixed16 = lock.bytes
                    }
                ]),
            insert(
                "Folder", folder, "name", "held",
                [
                    .with {
                        $0.name = "files"; $0.fixed16 = file.bytes; $0.counts = [1]
                    }
                ]),
        ])
        do {
            _ = try await save([delete("Folder", folder)])
            Issue.record("a delete through a deny rule was applied")
        } catch let error as StoreError {
            #expect(error.code == .constraint)
            #expect(error.message.contains("relationship 'lock' still points to 1 Lock object(s) (delete rule deny)"))
        }
        let (folders, files) = (try await count("Folder"), try await count("File"))
        #expect(folders == 1 && files == 1, "nothing of the refused change set applied")
    }
}
