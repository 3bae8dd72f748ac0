import Foundation
import GRDB
import Testing
import ZeroMQ

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Real coordinator and worker processes on loopback; the store is checked with a separate SQLite connection.
@Suite("Integration: coordinator, worker pool, import jobs, change feed", .serialized)
struct ImportIntegrationTests {
    /// What the generated input says each pull request should look like.
    struct Expected {
        var authorByNumber: [Int64: String] = [:]
        var reviewersByNumber: [Int64: Set<String>] = [:]
        var logins: Set<String> = []

        init(_ data: Data) throws {
            for line in data.split(separator: UInt8(ascii: "\n")) {
                let row = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
                let number = Int64(try #require(row["number"] as? Int))
                let author = try #require((row["author"] as? [String: Any])?["login"] as? String)
                let reviewers = try #require(row["reviewers"] as? [[String: Any]]).compactMap { $0["login"] as? String }
                authorByNumber[number] = author
                reviewersByNumber[number] = Set(reviewers)
                logins.insert(author)
                logins.formUnion(reviewers)
            }
        }

        /// How far the store is from the input: users missing or extra (or repeated), pull requests whose author
        /// or reviewers differ.
        func mismatches(in db: Database) throws -> (users: Int, authors: Int, reviewers: Int) {
            let stored = try String.fetchAll(db, sql: "SELECT login FROM User")
            let users = abs(stored.count - logins.count) + Set(stored).symmetricDifference(logins).count
            var authors = 0
            for row in try Row.fetchAll(
                db, sql: "SELECT p.number, u.login FROM PullRequest p LEFT JOIN User u ON u._rowid = p.author")
            where authorByNumber[row["number"]] != row["login"] {
                authors += 1
            }
            var storedReviewers: [Int64: Set<String>] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT p.number, u.login FROM PullRequest_reviewers r
                    JOIN PullRequest p ON p._rowid = r.source JOIN User u ON u._rowid = r.destination
                    """)
            {
                storedReviewers[row["number"], default: []].insert(row["login"])
            }
            let reviewers = reviewersByNumber.filter { number, logins in (storedReviewers[number] ?? []) != logins }
                .count
            return (users, authors, reviewers)
        }
    }

    @Test("10,000 rows with overlapping authors through 2 workers land exactly once, and the feed covers them in order")
    func importLandsExactlyOnce() async throws {
        let directory = try TemporaryDirectory()
        let input = DemoData.pullRequests(count: 10_000, users: 150)
        let expected = try Expected(input)
        let ((events, status), exitStatus) = try await TestCoordinator.with(in: directory, workers: 2) { coordinator in
            var options = ChangeFeed.Options()
            options.since = 0
            let feed = try ChangeFeed(
                feed: coordinator.process.feedEndpoint, jobs: coordinator.process.listenEndpoint, options: options)
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            // Small jobs so that the same authors appear in jobs handled by both workers.
            let pushed = try await client.pushImport(input, rowsPerJob: 250)
            #expect(pushed.ids.count == 40)
            // The feed is the event to wait for: every pull request committed.
            let events = try await withTimeout("every pull request on the feed", .seconds(120)) {
                var events: [DidSave] = []
                var pullRequests = Set<UUID>()
                for try await event in feed {
                    guard case .didSave(let save) = event else { continue }
                    events.append(save)
                    for id in save.inserted + save.updated where id.entity == "PullRequest" {
                        pullRequests.insert(id.uuid)
                    }
                    if pullRequests.count == 10_000 { break }
                }
                return events
            }
            let status = try await client.batchStatus(pushed.batch)
            await client.close()
            await feed.close()
            return (events, status)
        }
        #expect(exitStatus == 0, "the coordinator stops cleanly on SIGTERM")
        #expect(status.doneJobs == 40 && status.deadJobs == 0 && status.doneRows == 10_000)

        let store = try DatabaseQueue(path: directory.path("store.sqlite"))
        try await store.read { db in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest") == 10_000)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT number) FROM PullRequest") == 10_000)
            // Applied once: a second application would have been an update of the rows.
            #expect(try AppliedOnce.rewrittenObjects(of: "PullRequest", in: db) == 0)
            let mismatches = try expected.mismatches(in: db)
            #expect(mismatches.users == 0, "exactly one User per login of the input, and no other")
            #expect(mismatches.authors == 0, "every PullRequest.author points to the User with the input's login")
            #expect(mismatches.reviewers == 0, "every pull request's reviewers are the input's")

            // The feed: strictly increasing sequence numbers covering every object in the store.
            let seqs = events.map(\.seq)
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 })
            let storeIDs = Set(try Data.fetchAll(db, sql: "SELECT id FROM PullRequest").map { UUID(bytes: $0, at: 0) })
            let inserted = events.flatMap(\.inserted).filter { $0.entity == "PullRequest" }.map(\.uuid)
            #expect(inserted.count == 10_000, "each pull request is reported inserted exactly once")
            #expect(Set(inserted) == storeIDs)
            let userIDs = Set(try Data.fetchAll(db, sql: "SELECT id FROM User").map { UUID(bytes: $0, at: 0) })
            #expect(Set(events.flatMap(\.inserted).filter { $0.entity == "User" }.map(\.uuid)) == userIDs)
            #expect(try Int.fetchOne(db, sql: "SELECT MAX(seq) FROM tributary_history").map(UInt64.init) == seqs.last)
        }
    }

    @Test("malformed frames, unknown messages and an unknown entity are answered with errors while an import completes")
    func badInputWhileImporting() async throws {
        let directory = try TemporaryDirectory()
        let input = DemoData.pullRequests(count: 5_000, users: 100)
        let (status, exitStatus) = try await TestCoordinator.with(in: directory, workers: 2) { coordinator in
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            let pushed = try await client.pushImport(input, rowsPerJob: 100)

            // A raw peer speaking nonsense in the middle of the import.
            let context = try ZMQContext()
            let raw = try context.makeSocket(.dealer)
            try raw.connect(coordinator.process.listenEndpoint)
            func ask(_ frames: [Data]) throws -> ProtocolError {
                try raw.send(frames)
                guard try raw.waitForInput(milliseconds: 10_000), let reply = try raw.receive() else {
                    throw TimedOut(what: "an answer to \(frames.count) frames")
                }
                let envelope = try Wire.decode(reply[...])
                guard case .error(let error) = envelope.body else { throw TimedOut(what: "an error reply") }
                return ProtocolError(error)
            }
            #expect(try ask([Data("garbage".utf8)]).code == .malformedFrame)
            #expect(try ask([Data("TRB1".utf8), Data([0xFF, 0x01, 0x02])]).code == .malformedFrame)
            #expect(try ask(Wire.frames(Tributary_V1_Envelope())).code == .unknownMessage)
            #expect(try ask(Wire.frames(Wire.envelope(1, .saveChanges(.init())))).code == .unknownWorker)
            // A batch with an unreadable envelope in the middle: that one is refused, the others are answered.
            try raw.send([
                Wire.signature, try Wire.envelope(5, .statusRequest(.init())).serializedData(), Data([0xFF, 0x01]),
                try Wire.envelope(6, .statusRequest(.init())).serializedData(),
            ])
            var answers: [Tributary_V1_Envelope] = []
            while answers.count < 3, try raw.waitForInput(milliseconds: 10_000), let reply = try raw.receive() {
                answers.append(try Wire.decode(reply[...]))
            }
            // Statuses are answered by the reader pool, the refusal by the router: each by its request id.
            #expect(answers.map(\.requestID).sorted() == [0, 5, 6])
            guard answers.count == 3, case .error(let malformed) = answers.first(where: { $0.requestID == 0 })?.body
            else {
                throw TimedOut(what: "the batch's three answers")
            }
            #expect(malformed.code == .malformedFrame && malformed.message.contains("frame 2"))
            raw.close()
            context.terminate()

            let refused = await #expect(throws: ProtocolError.self) {
                try await client.push([ImportJob.spec(entity: "Nope", payload: Data("{}\n".utf8), rows: 1)])
            }
            #expect(refused?.code == .unknownEntity)
            let oversized = await #expect(throws: ProtocolError.self) {
                try await client.push([JobSpec(kind: "noop", total: 1 << 60)])
            }
            #expect(oversized?.code == .invalidRequest)
            #expect(oversized?.message.contains("total of job 0") == true)
            #expect(refused?.message.contains("unknown entity 'Nope'") == true)

            let status = try await client.finish(pushed.batch)
            await client.close()
            return status
        }
        #expect(exitStatus == 0)
        #expect(status.doneJobs == 50 && status.deadJobs == 0 && status.doneRows == 5_000)
        let count = try await DatabaseQueue(path: directory.path("store.sqlite")).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest")
        }
        #expect(count == 5_000)
    }
}

@Suite("Integration: an import job's batches", .serialized)
struct ImportChunkesIntegrationTests {
    /// Imports `input` (10 rows, 2 per batch, one attempt) until the job dies; its info and the numbers of the
    /// pull requests the store holds.
    func importUntilDead(_ input: Data, modelJSON: String = DemoData.modelJSON) async throws
        -> (job: JobInfo, numbers: [Int])
    {
        let directory = try TemporaryDirectory()
        let (job, exitStatus) = try await TestCoordinator.with(in: directory, workers: 1, modelJSON: modelJSON) {
            coordinator in
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            var spec = ImportJob.spec(entity: "PullRequest", payload: input, rows: 10, batchSize: 2)
            spec.maxAttempts = 1
            let id = try await client.push([spec]).ids[0]
            try await waitUntil("the job to die") { try await client.job(id).state == .dead }
            let job = try await client.job(id)
            await client.close()
            return job
        }
        #expect(exitStatus == 0)
        let numbers = try await DatabaseQueue(path: directory.path("store.sqlite")).read { db in
            try Int.fetchAll(db, sql: "SELECT number FROM PullRequest ORDER BY number")
        }
        return (job, numbers)
    }

    @Test("a row refused in the fourth batch fails the job after the first three commit in order, and no later batch")
    func refusedBatchStopsTheJob() async throws {
        var input = DemoData.pullRequests(count: 6, users: 3)
        input.append(contentsOf: "{\"number\": 7, \"title\": \n".utf8)
        input.append(DemoData.pullRequests(count: 3, users: 3, startingAt: 8))
        let (job, numbers) = try await importUntilDead(input)
        #expect(job.done == 6)
        #expect(job.errors.last?.message.contains("line 7") == true, "\(job.errors)")
        #expect(numbers == [1, 2, 3, 4, 5, 6])
    }

    @Test("a batch the root refuses fails the job, and the batch built while it was on the wire is never sent")
    func rootRefusalStopsTheJob() async throws {
        // Titles are unique too: row 7 gives pull request 2 the title of pull request 1, which the root refuses.
        let model = DemoData.modelJSON.replacingOccurrences(
            of: #""uniqueness": [["number"]]"#, with: #""uniqueness": [["number"], ["title"]]"#)
        var rows = String(decoding: DemoData.pullRequests(count: 10, users: 3), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        let firstTitle = try #require(rows[0].firstRange(of: #""title":"Improve module 1 (#1)""#))
        rows[6] = rows[6].replacingOccurrences(
            of: #""title":"Improve module 7 (#7)""#, with: String(rows[0][firstTitle])
        )
        .replacingOccurrences(of: #""number":7,"#, with: #""number":2,"#)
        let (job, numbers) = try await importUntilDead(
            Data((rows.joined(separator: "\n") + "\n").utf8), modelJSON: model)
        #expect(job.done == 6)
        #expect(job.errors.last?.message.contains("title") == true, "\(job.errors)")
        #expect(numbers == [1, 2, 3, 4, 5, 6])
    }
}
