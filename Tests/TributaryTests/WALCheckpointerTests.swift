import Foundation
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore

@Suite("WAL checkpoints off the writer")
struct WALCheckpointerTests {
    @Test("commits reach the database file while the store is open, below the writer's own checkpoint threshold")
    func checkpointsInBackground() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let store = try RootStore.open(path: path, model: try Model.decode(Data(everyTypeModelJSON.utf8)))
        defer { try? store.close() }
        let before = try Self.fileSize(path)
        for index in 0..<200 {
            _ = try await store.saves.applySave(
                .with {
                    $0.changes.batches = [
                        .inserting("Tag", "label", "tag-\(index)-" + String(repeating: "x", count: 500))
                    ]
                },
                from: "w1")
        }
        // About 100 KB of rows: far below the writer's threshold (WALCheckpointer.writerThresholdPages), so only
        // the checkpointer's connection copies them from the WAL into the file.
        try await waitUntil("the checkpointer to copy the commits into the database file", timeout: .seconds(10)) {
            try Self.fileSize(path) > before + 50_000
        }
    }

    @Test("the checkpointer goes on at once only while many frames wait and it makes progress")
    func goesOnOnlyWithProgress() {
        let many = WALCheckpointer.catchUpFrames
        // More than the catch-up frames left, some copied since the last call: again at once.
        #expect(
            WALCheckpointer.goesOnAtOnce(
                (logFrames: 2 * many, checkpointed: 400), after: (logFrames: many, checkpointed: 0)))
        // Fewer left: wait for the next interval, so that pages rewritten meanwhile are copied once.
        #expect(
            !WALCheckpointer.goesOnAtOnce(
                (logFrames: many + 400, checkpointed: 400), after: (logFrames: many, checkpointed: 0)))
        #expect(WALCheckpointer.goesOnAtOnce((logFrames: 900, checkpointed: 400), after: (0, 0), catchUp: 100))
        // Frames left, none copied since (a reader holds them): wait, or the thread would spin.
        #expect(
            !WALCheckpointer.goesOnAtOnce(
                (logFrames: 2 * many, checkpointed: 400), after: (logFrames: 2 * many, checkpointed: 400)))
        // Everything copied, or no WAL (-1 from SQLite): wait.
        #expect(
            !WALCheckpointer.goesOnAtOnce((logFrames: 900, checkpointed: 900), after: (0, 0), catchUp: 0))
        #expect(
            !WALCheckpointer.goesOnAtOnce((logFrames: -1, checkpointed: -1), after: (logFrames: 0, checkpointed: 0)))
        // The log started over (fewer frames than before) with many frames left: progress.
        #expect(
            WALCheckpointer.goesOnAtOnce(
                (logFrames: 2 * many, checkpointed: 100), after: (logFrames: 3 * many, checkpointed: 3 * many)))
    }

    private static func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
