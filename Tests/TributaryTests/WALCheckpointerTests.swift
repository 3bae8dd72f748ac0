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
            _ = try await store.applySave(
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

    private static func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
