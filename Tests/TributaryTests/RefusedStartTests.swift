import Foundation
import GRDB
import Testing
import ZeroMQ

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo

/// A coordinator that refuses its store leaves every file as it found it.
@Suite("Integration: a refused start changes nothing on disk", .serialized)
struct RefusedStartTests {
    /// Every file of `directory` (the store, its WAL and shared memory if any, its lock file) and its bytes.
    static func contents(of directory: TemporaryDirectory) throws -> [String: Data] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        return try Dictionary(
            uniqueKeysWithValues: names.filter { $0 != "model.json" && $0 != "changed.json" }.map {
                ($0, try Data(contentsOf: directory.url.appendingPathComponent($0)))
            })
    }

    static func startCoordinator(store: String, model: String) async throws -> (status: Int32, error: String) {
        // A refusal is quick: a coordinator that does not exit within a minute hangs on its way out.
        let result = try await Binaries.run(
            "tributary-coordinator",
            ["--store", store, "--model", model, "--listen", "tcp://127.0.0.1:*", "--feed", "tcp://127.0.0.1:*"],
            timeout: .seconds(60))
        return (result.status, result.error)
    }

    @Test("a model whose attribute changed type is refused, and the store's bytes stay as they were")
    func changedAttributeType() async throws {
        let directory = try TemporaryDirectory()
        // A store made and closed by a coordinator, with data in it.
        let (_, stopped) = try await TestCoordinator.with(in: directory, workers: 1) { coordinator in
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            _ = try await client.finish(
                try await client.pushImport(DemoData.pullRequests(count: 200, users: 10), rowsPerJob: 100).batch)
            await client.close()
        }
        #expect(stopped == 0)
        // A clean stop checkpoints the WAL into the file and removes it: the file alone is the store.
        #expect(!FileManager.default.fileExists(atPath: directory.path("store.sqlite-wal")))
        let changed = try directory.write(
            "changed.json",
            DemoData.modelJSON.replacingOccurrences(
                of: #"{"name": "additions", "type": "int"}"#, with: #"{"name": "additions", "type": "string"}"#))
        let before = try Self.contents(of: directory)

        let refused = try await Self.startCoordinator(store: directory.path("store.sqlite"), model: changed)
        #expect(refused.status == 1)
        #expect(refused.error.contains("'PullRequest.additions'"), "\(refused.error)")
        let after = try Self.contents(of: directory)
        #expect(after == before, "no file was written, created or removed: \(Self.difference(before, after))")
    }

    @Test("a SQLite file Tributary did not create is refused, left in its journal mode and size, with no lock file")
    func foreignFile() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("notes.sqlite")
        let queue = try DatabaseQueue(path: path)
        try await queue.write { try $0.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)") }
        try queue.close()
        let model = try directory.write("model.json", DemoData.modelJSON)
        let before = try Self.contents(of: directory)

        let refused = try await Self.startCoordinator(store: path, model: model)
        #expect(refused.status == 1)
        #expect(refused.error.contains("did not create (it has tables notes)"), "\(refused.error)")
        let after = try Self.contents(of: directory)
        #expect(after == before, "no file was written, created or removed: \(Self.difference(before, after))")
    }

    @Test(
        "a jobs endpoint another socket holds refuses the start before the store is opened: a job left running stays so"
    )
    func takenListenEndpoint() async throws {
        let directory = try TemporaryDirectory()
        try await Self.makeStoreWithAJobLeftRunning(in: directory)
        let context = try ZMQContext()
        let holder = try context.makeSocket(.router)
        let taken = try holder.bind("tcp://127.0.0.1:*")
        defer {
            holder.close()
            context.terminate()
        }
        let model = try directory.write("model.json", DemoData.modelJSON)
        let before = try Self.contents(of: directory)

        let refused = try await Binaries.run(
            "tributary-coordinator",
            [
                "--store", directory.path("store.sqlite"), "--model", model, "--listen", taken, "--feed",
                "tcp://127.0.0.1:*",
            ],
            timeout: .seconds(60))
        #expect(refused.status != 0)
        #expect(refused.error.contains("in use"), "\(refused.error)")
        let after = try Self.contents(of: directory)
        #expect(after == before, "no file was written, created or removed: \(Self.difference(before, after))")
    }

    @Test("a local pool whose worker executable is missing refuses the start before the store is opened")
    func missingWorkerExecutable() async throws {
        let directory = try TemporaryDirectory()
        try await Self.makeStoreWithAJobLeftRunning(in: directory)
        let model = try directory.write("model.json", DemoData.modelJSON)
        let missing = directory.path("no-such-worker")
        let before = try Self.contents(of: directory)

        let refused = try await Binaries.run(
            "tributary-coordinator",
            [
                "--store", directory.path("store.sqlite"), "--model", model, "--listen", "tcp://127.0.0.1:*",
                "--feed", "tcp://127.0.0.1:*", "--workers", "1", "--worker-path", missing,
            ],
            timeout: .seconds(60))
        #expect(refused.status != 0)
        #expect(refused.error.contains(missing), "\(refused.error)")
        let after = try Self.contents(of: directory)
        #expect(after == before, "no file was written, created or removed: \(Self.difference(before, after))")
    }

    /// A store made and closed by a coordinator, then left with its one job running, as a crash leaves it: opening
    /// the store would count the attempt as lost and re-queue the job, so a start refused after the open shows.
    static func makeStoreWithAJobLeftRunning(in directory: TemporaryDirectory) async throws {
        let (_, stopped) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            _ = try await client.push([JobSpec(kind: "noop")])
            await client.close()
        }
        #expect(stopped == 0)
        let queue = try DatabaseQueue(path: directory.path("store.sqlite"))
        try await queue.write { db in
            try db.execute(sql: "UPDATE tributary_jobs SET state = 'running', attempt = 1, worker = 'w1'")
        }
        try queue.close()
    }

    /// The files that differ, with their sizes before and after.
    static func difference(_ before: [String: Data], _ after: [String: Data]) -> String {
        Set(before.keys).union(after.keys).sorted().filter { before[$0] != after[$0] }.map {
            "\($0) \(before[$0]?.count ?? -1) → \(after[$0]?.count ?? -1) bytes"
        }.joined(separator: ", ")
    }
}
