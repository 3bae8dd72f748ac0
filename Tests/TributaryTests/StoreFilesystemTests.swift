import Foundation
import GRDB
import Testing
import TributaryProtocol
import TributaryTestSupport

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo

/// A store whose filesystem fills up, or turns read-only, under a running coordinator with a worker pool importing:
/// writes are refused with `STORE_UNWRITABLE` naming the cause, reads, the feed and the HTTP endpoint keep serving,
/// jobs wait rather than fail, nothing acknowledged is lost and nothing refused is half done; once the store can be
/// written again the import finishes with every row once.
@Suite("Store filesystem: a full disk and a read-only filesystem under a running coordinator", .serialized)
struct StoreFilesystemTests {
    /// `count` users as NDJSON, with names long enough that a few thousand fill a few megabytes.
    static func users(_ count: Int) -> Data {
        let padding = String(repeating: "x", count: 200)
        return Data(
            (0..<count).map { #"{"login": "user\#($0)", "name": "User \#($0) \#(padding)"}"# + "\n" }.joined().utf8)
    }

    /// What the test asked of the coordinator while the store could not be written: the first refusal, and the
    /// requests taken before it (each names what it wrote, to be found once at the end).
    struct Probes {
        var acceptedPushes: [String] = []
        var refusedPush: (key: String, error: ProtocolError)?
        var acceptedSaves: [String] = []
        var refusedSave: (login: String, error: ProtocolError)?
    }

    /// Pushes a job with a unique key, and saves a user from a context, until each is refused: a checkpoint may free
    /// room for a small write now and then, so a write while the store is full may also be taken.
    static func probe(_ client: JobClient, _ coordinator: TestCoordinator) async throws -> Probes {
        var probes = Probes()
        for index in 0..<50 where probes.refusedPush == nil {
            let key = "probe-\(index)"
            do {
                _ = try await client.push([
                    JobSpec(kind: "noop", payload: Data(repeating: 120, count: 16_384), uniqueKey: key)
                ])
                probes.acceptedPushes.append(key)
            } catch let error as ProtocolError {
                probes.refusedPush = (key, error)
            }
        }
        let model = try await client.model()
        let connection = try CoordinatorConnection(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await connection.close() } }
        for index in 0..<50 where probes.refusedSave == nil {
            let login = "view-\(index)"
            let context = ObjectContext(model: model, parent: CoordinatorStore(connection: connection))
            try await context.perform { context in
                let user = try context.insert("User")
                user["login"] = .string(login)
                user["name"] = .string(String(repeating: "v", count: 16_384))
            }
            do {
                try await context.save()
                probes.acceptedSaves.append(login)
            } catch let error as ProtocolError {
                probes.refusedSave = (login, error)
            }
        }
        return probes
    }

    /// Checks what a coordinator that cannot write its store still serves: status, a fetch, the history from seq 0
    /// to a new subscriber, and the HTTP probes, metrics and status.
    static func checkReadsServe(_ coordinator: TestCoordinator, _ client: JobClient, reason: String) async throws {
        let status = try await client.status()
        #expect(status.storeUnwritable?.contains(reason) == true, "\(status.storeUnwritable ?? "writable")")
        #expect(try await client.count(of: "User") > 0)
        let subscriber = try StartedProcess.start(
            "tributary",
            [
                "subscribe", "--since", "0", "--format", "json", "--feed", coordinator.process.feedEndpoint,
                "--listen", coordinator.process.listenEndpoint,
            ])
        defer { subscriber.kill() }
        let lastSeq = status.lastSeq
        _ = try await subscriber.waitForOutput(timeout: .seconds(60)) { SubscribeCommandTests.seq($0) == lastSeq }
        let url = try #require(coordinator.process.httpURL)
        #expect(try await HTTPRequests.send(url + "healthz").status == 200)
        let metrics = try await HTTPRequests.send(url + "metrics")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("\ntributary_store_writable 0"), "the gauge says the store is not writable")
        let api = try await HTTPRequests.send(url + "api/status")
        #expect(api.status == 200, "\(api.body.prefix(300))")
        #expect(api.body.contains(reason), "\(api.body.prefix(300))")
    }

    /// Checks a refusal: `STORE_UNWRITABLE`, naming `reason`.
    /// The jobs named (`job=N`) on the log's lines that end with `message` (and contain `containing`).
    static func jobIDs(in log: String, on message: String, containing: String = "") -> Set<Int> {
        Set(
            log.split(separator: "\n").filter { $0.hasSuffix(message) && $0.contains(containing) }.compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix("job=") }.flatMap { Int($0.dropFirst(4)) }
            })
    }

    static func checkRefused(_ error: ProtocolError?, _ what: String, reason: String) {
        #expect(error?.code == .storeUnwritable, "\(what): \(error.map(String.init(describing:)) ?? "never refused")")
        #expect(error?.message.contains(reason) == true, "\(what): \(error?.message ?? "")")
    }

    /// Checks the store with a connection of the test's own: intact; every user of the import once, with the
    /// accepted view saves, and no refused one; every accepted push's job once, and no refused one.
    static func checkStore(_ path: String, users: Int, _ probes: Probes) throws {
        let database = try DatabaseQueue(path: path)
        let (integrity, count, distinct, saved, pushed, dead) = try database.read { db in
            (
                try String.fetchOne(db, sql: "PRAGMA integrity_check"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM User WHERE login LIKE 'user%'"),
                try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT login) FROM User WHERE login LIKE 'user%'"),
                try String.fetchAll(db, sql: "SELECT login FROM User WHERE login LIKE 'view-%'"),
                try String.fetchAll(db, sql: "SELECT unique_key FROM tributary_jobs WHERE unique_key LIKE 'probe-%'"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE state = 'dead'")
            )
        }
        #expect(integrity == "ok")
        #expect(count == users && distinct == users, "every row of the import once")
        #expect(saved.sorted() == probes.acceptedSaves.sorted(), "the saves taken, once; the one refused, absent")
        #expect(pushed.sorted() == probes.acceptedPushes.sorted(), "the pushes taken, once; the one refused, absent")
        #expect(dead == 0)
    }

    @Test(
        "a full disk: saves and pushes refused naming it, reads, the feed and HTTP serve, jobs wait without losing an attempt and finish once space is freed; every row once",
        .enabled(if: SmallFilesystem.tmpfsAvailable, "needs root to mount a tmpfs")
    )
    func diskFull() async throws {
        let directory = try TemporaryDirectory()
        let filesystem = try SmallFilesystem(tmpfsMegabytes: 64)
        defer { filesystem.remove() }
        // Workers of their own, started once the disk is filled: the whole import then needs the room that is not
        // there, however fast or slow the machine.
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, storePath: filesystem.path("store.sqlite"))
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let rows = 30_000
        let batch = try await client.pushImport(Self.users(rows), entity: "User", rowsPerJob: 500).batch
        // A commit for the reads to find while the disk is full.
        let connection = try CoordinatorConnection(endpoint: coordinator.process.listenEndpoint)
        let seeding = ObjectContext(model: try await client.model(), parent: CoordinatorStore(connection: connection))
        try await seeding.perform { context in try context.insert("User")["login"] = .string("seed") }
        try await seeding.save()
        await connection.close()
        // The import's rows take several times what is left.
        try filesystem.fill(leaving: 2)
        let workerLog = directory.path("workers.log")
        _ = FileManager.default.createFile(atPath: workerLog, contents: nil)
        let workers = try (0..<2).map { _ in
            let process = Process()
            process.executableURL = Binaries.url("tributary-worker")
            process.arguments = ["--connect", coordinator.process.listenEndpoint, "--log-level", "info"]
            // Appending: the two workers share the file, and would write over each other's lines otherwise.
            let log = FileHandle(fileDescriptor: open(workerLog, O_WRONLY | O_APPEND), closeOnDealloc: true)
            process.standardOutput = log
            process.standardError = log
            try process.run()
            return process
        }
        defer { for worker in workers where worker.isRunning { kill(worker.processIdentifier, SIGKILL) } }

        try await waitUntil("a write refused for the full disk", timeout: .seconds(120)) {
            try await client.status().storeUnwritable != nil
        }
        let probes = try await Self.probe(client, coordinator)
        Self.checkRefused(probes.refusedPush?.error, "a push", reason: "disk is full")
        Self.checkRefused(probes.refusedSave?.error, "a view context's save", reason: "disk is full")
        try await Self.checkReadsServe(coordinator, client, reason: "disk is full")
        let (retried, running) = try await DatabaseQueue(path: coordinator.storePath).read { db in
            (
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE attempt - uncounted > 1"),
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE state = '\(JobState.running.rawValue)'")
            )
        }
        #expect(retried == 0, "no job lost an attempt to the full disk")

        try filesystem.freeFilled()
        let finished = try await client.finish(batch, timeout: .seconds(300))
        #expect(finished.doneJobs == finished.totalJobs)
        // Said once no write has been refused for a few seconds (a write may fit on a nearly full disk).
        try await waitUntil("the log to say the store can be written again", timeout: .seconds(30)) {
            coordinator.log.contains("the store can be written again")
        }
        #expect(try await client.status().storeUnwritable == nil)
        try Self.checkStore(coordinator.storePath, users: rows, probes)
        let importsRetried = try await DatabaseQueue(path: coordinator.storePath).read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE kind = 'import' AND attempt - uncounted > 1")
        }
        #expect(importsRetried == 0, "no import job lost an attempt to the full disk")
        let log = coordinator.log
        #expect(log.contains("the store cannot be written"))
        #expect(!log.contains("claim failed"), "claims that find the disk full are not logged one by one")
        let workersLog = (try? String(contentsOfFile: workerLog, encoding: .utf8)) ?? ""
        // A job claimed before the disk filled cannot complete while it is full: its save was refused and waited.
        // (Where the disk filled before any claim, every claim waited instead: the jobs started once space was freed.)
        if (running ?? 0) > 0 {
            #expect(workersLog.contains("the job's save waits"), "a job's save was refused and waited")
        }
        #expect(!log.contains("job failed"), "no job failed for the full disk")
    }

    @Test(
        "a filesystem turned read-only by a disk error: writes refused naming it, reads, the feed and HTTP serve, no job dies; after a repair and a restart the import finishes with every row once",
        .enabled(if: SmallFilesystem.ext4Available, "needs root, mkfs.ext4, loop devices and ext4's trigger_fs_error")
    )
    func readOnlyFilesystem() async throws {
        let filesystem = try SmallFilesystem(ext4Megabytes: 128)
        defer { filesystem.remove() }
        let storePath = filesystem.path("store.sqlite")
        let rows = 30_000
        let batch: String
        let probes: Probes
        do {
            let directory = try TemporaryDirectory()
            let coordinator = try await TestCoordinator.start(in: directory, workers: 2, storePath: storePath)
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            batch = try await client.pushImport(Self.users(rows), entity: "User", rowsPerJob: 500).batch
            try await waitUntil("the import to commit a few saves", timeout: .seconds(120)) {
                try await client.status().lastSeq >= 5
            }
            try filesystem.failReadOnly()
            try await waitUntil("a write refused for the read-only filesystem", timeout: .seconds(60)) {
                if try await client.status().storeUnwritable != nil { return true }
                // The import may have ended before the filesystem failed: a push of a job no worker runs is a write
                // of the test's own (refused, or written before the filesystem turned read-only).
                _ = try? await client.push([JobSpec(kind: "read-only-probe")], batch: "read-only-probe")
                return false
            }
            probes = try await Self.probe(client, coordinator)
            Self.checkRefused(probes.refusedPush?.error, "a push", reason: "read-only")
            Self.checkRefused(probes.refusedSave?.error, "a view context's save", reason: "read-only")
            try await Self.checkReadsServe(coordinator, client, reason: "read-only")
            let dead = try await DatabaseQueue(path: storePath).read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE state = 'dead'")
            }
            #expect(dead == 0)
            let log = coordinator.log
            #expect(log.contains("the store cannot be written"))
            // Whether a save was refused depends on where the jobs were when the filesystem failed (the claims after
            // it are held): the full-disk test shows saves waiting. A commit whose frames were written before the
            // filesystem failed and whose sync came after has an unknown outcome (SQLite code 1034): its saves are
            // refused as ordinary errors, and their jobs' attempts fail (to be retried, every row once, below). No
            // other job fails.
            let failed = Self.jobIDs(in: log, on: "job failed")
            let syncFailed = Self.jobIDs(in: log, on: "save refused", containing: "SQLite code 1034")
            #expect(failed.isSubset(of: syncFailed), "jobs failed: \(failed), saves whose sync failed: \(syncFailed)")
            await client.close()
            // A stop cannot hand the running jobs back (a write): the next start finds them, as after a crash.
            _ = try await withTimeout("the coordinator to stop", .seconds(120)) { await coordinator.process.stop() }
        }

        try filesystem.repair()
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2, storePath: storePath)
        defer { Task { await coordinator.process.stop() } }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let finished = try await client.finish(batch, timeout: .seconds(300))
        #expect(finished.doneJobs == finished.totalJobs)
        try Self.checkStore(storePath, users: rows, probes)
    }
}
