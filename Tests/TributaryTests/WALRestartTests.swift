import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryProtocol

/// The writer starts its write-ahead log over under small writes (`WALRestart`), so small commits overwrite the
/// log's blocks instead of appending to a file that grows to the backstop.
@Suite("WAL restart under small writes")
struct WALRestartTests {
    let directory: TemporaryDirectory
    let model: Model

    init() throws {
        directory = try TemporaryDirectory()
        model = try Model.decode(Data(everyTypeModelJSON.utf8))
    }

    @Test("small commits keep the WAL file near the restart size, every commit kept")
    func smallCommitsStartTheLogOver() async throws {
        let path = directory.path("store.sqlite")
        let store = try RootStore.open(path: path, model: model)
        // The writer's checkpoints alone: on a slow run the background checkpointer copies every frame between two
        // commits, and SQLite then starts the log over by itself, which would keep it small without them.
        store.testsOnly_stopCheckpointer()
        let saves = 4_000
        for index in 0..<saves {
            _ = try await store.saves.applySave(
                .with { $0.changes.batches = [.inserting("Tag", "label", "tag \(index)")] }, from: "v")
        }
        // Appended, the log would hold every commit's frames (4 pages or more each: over 64 MiB); started over, it
        // stays near the restart size (16 MiB), a try or two that readers held back aside.
        let walBytes = try #require(
            try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
        let bound = Int(WALRestart.restartFrames) * 2 * 4096
        #expect(walBytes <= bound, "the WAL holds \(walBytes) bytes")
        #expect(store.walRestart.checkpoints > 0)
        try store.close()
        let check = try DatabaseQueue(path: path)
        #expect(try await check.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \"Tag\"") } == saves)
        #expect(try await check.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
    }
}
