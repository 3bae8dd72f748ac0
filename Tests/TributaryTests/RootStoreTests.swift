import Foundation
import GRDB
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// A model with every attribute type, for codec round trips.
let everyTypeModelJSON = """
    {"entities": [
      {"name": "Tag", "attributes": [{"name": "label", "type": "string"}], "uniqueness": [["label"]]},
      {"name": "Thing", "attributes": [
        {"name": "text", "type": "string"}, {"name": "count", "type": "int"}, {"name": "ratio", "type": "double"},
        {"name": "flag", "type": "bool"}, {"name": "when", "type": "date"}, {"name": "blob", "type": "data"},
        {"name": "token", "type": "uuid"}, {"name": "note", "type": "string", "optional": true}],
       "relationships": [{"name": "primary", "destination": "Tag"}, {"name": "tags", "destination": "Tag", "toMany": true}]}]}
    """

@Suite("Root store: schema, codec round trip, merge rules")
struct RootStoreTests {
    let directory: TemporaryDirectory
    let model: Model
    let store: RootStore

    init() throws {
        directory = try TemporaryDirectory()
        model = try Model.decode(Data(everyTypeModelJSON.utf8))
        store = try RootStore.open(path: directory.path("store.sqlite"), model: model)
    }

    /// A separate, read-only connection to the store file.
    func reader() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: directory.path("store.sqlite"), configuration: configuration)
    }

    @Test("every attribute type and both relationship kinds survive context → change set → wire → store")
    func codecRoundTrip() async throws {
        let context = ObjectContext(model: model, parent: LocalRootParent(store: store))
        let when = Date(timeIntervalSince1970: 1_700_000_123.5)
        let token = UUID()
        let ids = try await context.perform { context -> [UUID] in
            let red = try context.findOrCreate("Tag", matching: ["label": .string("red")])
            let blue = try context.findOrCreate("Tag", matching: ["label": .string("blue")])
            let thing = try context.insert("Thing")
            try thing.setValue(.string("héllo \"quoted\"; --"), for: "text")
            try thing.setValue(.int(-42), for: "count")
            try thing.setValue(.double(0.25), for: "ratio")
            try thing.setValue(.bool(true), for: "flag")
            try thing.setValue(.date(when), for: "when")
            try thing.setValue(.data(Data([0, 1, 2, 255])), for: "blob")
            try thing.setValue(.uuid(token), for: "token")
            try thing.setDestination(red, for: "primary")
            try thing.setDestinations([red, blue], for: "tags")
            return [thing.objectID.uuid, red.objectID.uuid, blue.objectID.uuid]
        }
        // The change set must also survive protobuf serialization unchanged.
        let changeSet = try await context.perform { context in context.takePendingChanges().changeSet }
        let decoded = try Tributary_V1_ChangeSet(serializedBytes: try changeSet.serializedData())
        #expect(decoded == changeSet)
        _ = try await LocalRootParent(store: store).save(decoded)

        let row = try #require(try reader().read { db in try Row.fetchOne(db, sql: "SELECT * FROM Thing") })
        #expect(row["id"] == ids[0].bytes)
        #expect(row["text"] == "héllo \"quoted\"; --")
        #expect(row["count"] == -42)
        #expect(row["ratio"] == 0.25)
        #expect(row["flag"] == 1)
        #expect(row["when"] == when.timeIntervalSince1970)
        #expect(row["blob"] == Data([0, 1, 2, 255]))
        #expect(row["token"] == token.bytes)
        #expect(row["note"] as DatabaseValue == .null)
        #expect(
            try await reader().read { db in
                try Data.fetchOne(db, sql: "SELECT t.id FROM Thing h JOIN Tag t ON t._rowid = h.\"primary\"")
            } == ids[1].bytes)
        let tags = try await reader().read { db in
            try Data.fetchAll(
                db,
                sql: """
                    SELECT d.id FROM Thing_tags j JOIN Thing s ON s._rowid = j.source JOIN Tag d ON d._rowid = j.destination
                    WHERE s.id = ?
                    """, arguments: [ids[0].bytes])
        }
        #expect(Set(tags) == Set([ids[1].bytes, ids[2].bytes]))
    }

    @Test("a duplicate insert becomes an update of the existing object, and relationships follow it")
    func uniquenessMerge() async throws {
        let first = ObjectContext(model: model, parent: LocalRootParent(store: store), name: "first")
        let second = ObjectContext(model: model, parent: LocalRootParent(store: store), name: "second")
        let firstTag = try await first.perform { context in
            try context.findOrCreate("Tag", matching: ["label": .string("red")]).objectID.uuid
        }
        try await first.save()
        let (secondTag, thing) = try await second.perform { context -> (UUID, UUID) in
            let tag = try context.findOrCreate("Tag", matching: ["label": .string("red")])
            let thing = try context.insert("Thing")
            for (name, value) in Self.requiredValues { try thing.setValue(value, for: name) }
            try thing.setDestination(tag, for: "primary")
            try thing.setDestinations([tag], for: "tags")
            return (tag.objectID.uuid, thing.objectID.uuid)
        }
        #expect(firstTag != secondTag)
        let receipt = try await second.save()
        #expect(receipt.remaps == [secondTag: firstTag])
        let (tags, primary, joined) = try await reader().read { db in
            (
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM Tag")!,
                try Data.fetchOne(db, sql: "SELECT t.id FROM Thing h JOIN Tag t ON t._rowid = h.\"primary\"")!,
                try Data.fetchOne(
                    db,
                    sql: """
                        SELECT d.id FROM Thing_tags j JOIN Thing s ON s._rowid = j.source
                        JOIN Tag d ON d._rowid = j.destination WHERE s.id = ?
                        """, arguments: [thing.bytes])!
            )
        }
        #expect(tags == 1)
        #expect(primary == firstTag.bytes)
        #expect(joined == firstTag.bytes)
        // The second context now knows its tag by the surviving id.
        let rekeyed = try await second.perform { context in
            try context.findOrCreate("Tag", matching: ["label": .string("red")]).objectID.uuid
        }
        #expect(rekeyed == firstTag)
    }

    @Test("a save whose inserts all merge into existing objects still returns their remaps, and takes no seq")
    func remapsOfAnEmptyCommit() async throws {
        let first = ObjectContext(model: model, parent: LocalRootParent(store: store), name: "first")
        let existing = try await first.perform { context in
            try context.findOrCreate("Tag", matching: ["label": .string("red")]).objectID.uuid
        }
        try await first.save()
        let second = ObjectContext(model: model, parent: LocalRootParent(store: store), name: "second")
        let proposed = try await second.perform { context in
            try context.findOrCreate("Tag", matching: ["label": .string("red")]).objectID.uuid
        }
        let receipt = try await second.save()
        #expect(receipt.seq == 0)
        #expect(receipt.remaps == [proposed: existing])
        #expect(try await store.feed.lastSequenceNumber() == 1)
    }

    static let requiredValues: [(String, AttributeValue)] = [
        ("text", .string("t")), ("count", .int(1)), ("ratio", .double(1)), ("flag", .bool(false)),
        ("when", .date(Date(timeIntervalSince1970: 0))), ("blob", .data(Data())), ("token", .uuid(UUID())),
    ]

    @Test(
        "change sets that do not fit the model are refused with the problem named, and change nothing",
        arguments: [
            ("Nope", "label", StoreError.Code.unknownEntity, "unknown entity 'Nope'"),
            ("Tag", "colour", .unknownAttribute, "has no attribute or relationship 'colour'"),
            ("Tag", "label-as-int", .wrongType, "carries 0 strings where 1 were expected"),
        ])
    func refusesBadChangeSets(entity: String, column: String, code: StoreError.Code, message: String) async throws {
        var batch = Tributary_V1_EntityBatch()
        batch.entity = entity
        batch.operation = .insert
        batch.ids = UUID().bytes
        var values = Tributary_V1_Column()
        if column == "label-as-int" {
            values.name = "label"
            values.ints = [7]
        } else {
            values.name = column
            values.strings = ["x"]
        }
        batch.columns = [values]
        var save = Tributary_V1_SaveChanges()
        save.changes.batches = [batch]
        let error = try await #require(throws: StoreError.self) { try await store.saves.applySave(save, from: "test") }
        #expect(error.code == code)
        #expect(error.message.contains(message), "\(error.message)")
        #expect(try await reader().read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM Tag") } == 0)
        #expect(try await store.feed.lastSequenceNumber() == 0)
    }

    @Test("an insert lacking a required attribute is refused by name")
    func requiredAttributes() async throws {
        let context = ObjectContext(model: model, parent: LocalRootParent(store: store))
        try await context.perform { context in _ = try context.insert("Thing") }
        let error = try await #require(throws: StoreError.self) { try await context.save() }
        #expect(error.message.contains("lacks required attribute 'text'"))
        #expect(try await context.perform { $0.hasChanges }, "a failed save keeps the changes pending")
    }

    @Test("a job's batch applies at most once, and only while its attempt holds the lease")
    func exactlyOnceAndFencing() async throws {
        let ids = try await store.jobs.pushJobs([JobSpec(kind: "custom")], batch: "b").ids
        let job = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["custom"]))
        #expect(job.id == ids[0] && job.attempt == 1)

        var save = Tributary_V1_SaveChanges()
        save.jobID = UInt64(job.id)
        save.attempt = 1
        save.batchIndex = 0
        save.changes.batches = [
            .inserting("Tag", "label", "once")
        ]
        guard case .committed(let seq, _, _, _) = try await store.saves.applySave(save, from: "w1") else {
            Issue.record("first save was not committed")
            return
        }
        guard case .duplicate(let again) = try await store.saves.applySave(save, from: "w1") else {
            Issue.record("the repeated batch was applied again")
            return
        }
        #expect(again == seq)
        #expect(try await reader().read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM Tag") } == 1)

        save.batchIndex = 1
        save.attempt = 2
        await #expect(throws: LeaseError.self) { try await store.saves.applySave(save, from: "w1") }
        save.attempt = 1
        await #expect(throws: LeaseError.self) { try await store.saves.applySave(save, from: "w2") }
    }

    @Test("an existing store opens by a path relative to the working directory")
    func relativePath() throws {
        try store.close()
        var relative = directory.path("store.sqlite")
        let here = FileManager.default.currentDirectoryPath
        relative =
            String(repeating: "../", count: URL(fileURLWithPath: here).pathComponents.count - 1)
            + relative.dropFirst()
        let reopened = try RootStore.open(path: relative, model: model)
        try reopened.close()
    }

    @Test("reopening with an incompatible model is refused, naming the difference")
    func incompatibleModel() throws {
        try store.close()
        let error = try #require(throws: ModelError.self) {
            try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        }
        #expect(error.message.contains("entity 'Tag' was removed"))
    }

    @Test("a SQLite file that Tributary did not create is refused")
    func foreignFile() throws {
        let path = directory.path("foreign.sqlite")
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "CREATE TABLE accounts (id INTEGER)") }
        try queue.close()
        let error = try #require(throws: StoreError.self) { try RootStore.open(path: path, model: model) }
        #expect(error.message.contains("did not create"))
    }
}

@Suite("Root store: job fencing and limits")
struct JobFencingTests {
    let directory: TemporaryDirectory
    let store: RootStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
    }

    func claimedSave(batch: UInt32) async throws -> Tributary_V1_SaveChanges {
        _ = try await store.jobs.pushJobs([JobSpec(kind: "noop")], batch: "b")
        let job = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        var save = Tributary_V1_SaveChanges()
        save.jobID = UInt64(job.id)
        save.attempt = UInt32(job.attempt)
        save.batchIndex = batch
        return save
    }

    @Test("a batch that skips ahead of the committed batches is refused, so a retry can never skip rows")
    func batchesInOrder() async throws {
        let save = try await claimedSave(batch: 1)
        let error = try await #require(throws: LeaseError.self) { try await store.saves.applySave(save, from: "w1") }
        #expect(error.isOutOfOrder)
        #expect(error.message.contains("sent batch 1 before batch 0"))
    }

    @Test("a second store on the same file is refused while the first is open")
    func singleWriter() throws {
        let error = try #require(throws: StoreError.self) {
            try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        }
        #expect(error.code == .locked)
        try store.close()
    }

    @Test("a save of a group that fails after writing is undone alone: the saves around it commit")
    func failedSaveUndoneAlone() async throws {
        func inserting(_ label: String) -> Tributary_V1_EntityBatch { .inserting("User", "login", label) }
        let missing = Tributary_V1_EntityBatch.with {
            $0.entity = "User"
            $0.operation = .update
            $0.ids = UUID().bytes
            $0.columns = [
                .with {
                    $0.name = "login"; $0.strings = ["x"]
                }
            ]
        }
        func save(_ batches: [Tributary_V1_EntityBatch]) -> Tributary_V1_SaveChanges {
            .with { $0.changes = .with { $0.batches = batches } }
        }
        // The middle save inserts "b", then fails on an update of an object that does not exist.
        let results = try await store.saves.applySaves([
            (save([inserting("a")]), "w1"), (save([inserting("b"), missing]), "w1"), (save([inserting("c")]), "w1"),
        ])
        #expect(results.map { (try? $0.get()) != nil } == [true, false, true])
        let labels = try await store.pool.read { db in
            try String.fetchAll(db, sql: "SELECT login FROM User ORDER BY login")
        }
        #expect(labels == ["a", "c"])
        let seqs = try await store.pool.read { db in
            try Int.fetchAll(db, sql: "SELECT seq FROM tributary_history ORDER BY seq")
        }
        #expect(seqs == [1, 2])
    }

    @Test("a group's batch counters take the saves that applied, once each; a refused save changes nothing")
    func groupCountsAppliedSaves() async throws {
        let spec = Tributary_V1_JobSpec.with {
            $0.kind = "noop"
            $0.total = 10
        }
        _ = try await store.jobs.pushJobs(Array(repeating: spec, count: 4), batch: "b")
        let jobs = try await store.jobs.claimJobs(for: "w1", kinds: ["noop"], limit: 4)
        func save(_ job: ClaimedJob, attempt: Int? = nil, _ changes: [Tributary_V1_EntityBatch] = [])
            -> Tributary_V1_SaveChanges
        {
            .with {
                $0.jobID = UInt64(job.id)
                $0.attempt = UInt32(attempt ?? job.attempt)
                $0.progressDone = 10
                $0.completesJob = true
                $0.changes.batches = changes
            }
        }
        let results = try await store.saves.applySaves([
            (save(jobs[0]), "w1"),  // no changes: no savepoint
            (save(jobs[1], attempt: 7), "w1"),  // not its attempt
            (save(jobs[2], [.inserting("User", "login", "kept")]), "w1"),
            (save(jobs[3], [.inserting("User", "login", "undone"), .inserting("Nope", "x", "y")]), "w1"),
        ])
        #expect(results.map { (try? $0.get()) != nil } == [true, false, true, false])
        let status = try await store.jobs.batchStatus("b")
        #expect(status.doneJobs == 2 && status.doneRows == 20)
        #expect(try await store.jobs.job(id: jobs[1].id)?.state == .running)
        #expect(try await store.jobs.job(id: jobs[3].id)?.state == .running)
        let logins = try await store.pool.read { try String.fetchAll($0, sql: "SELECT login FROM User") }
        #expect(logins == ["kept"], "the refused save's insert was undone with it")
    }

    @Test("progress summed over a group saturates instead of overflowing (each save may report up to 2^53)")
    func batchProgressSaturates() {
        var progress = BatchProgress(batch: "b", rows: Int64.max - 5, jobs: 1)
        progress.add(BatchProgress(batch: "b", rows: 1 << 53, jobs: 1))
        #expect(progress.rows == Int64.max && progress.jobs == 2)
        progress.add(BatchProgress(batch: "b", rows: Int64.min, jobs: 0))
        #expect(progress.rows == -1)
    }

    @Test("a batch's status finds its dead jobs in their own index, not by reading every job of the batch")
    func deadJobsIndexed() async throws {
        // Clients poll this while they wait for a batch: reading all its jobs made each poll cost O(batch).
        let plan = try await store.pool.read { db in
            try Row.fetchAll(
                db, sql: "EXPLAIN QUERY PLAN \(JobStore.deadJobsOfBatchSQL)", arguments: ["b"]
            ).map { $0["detail"] as String }
        }
        #expect(plan == ["SEARCH tributary_jobs USING INDEX tributary_jobs_dead (batch=?)"])
    }

    @Test("payloads are kept apart from job rows and come back with the claim")
    func payloadRoundTrip() async throws {
        let payload = Data(repeating: 7, count: 300_000)
        _ = try await store.jobs.pushJobs(
            [
                Tributary_V1_JobSpec.with {
                    $0.kind = "noop"; $0.payload = payload
                }
            ], batch: "b")
        let job = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(job.spec.payload == payload)
    }

    @Test("a done job's payload is deleted when it completes; a dead job keeps its payload, and runs again with it")
    func payloadsOfFinishedJobs() async throws {
        let spec = Tributary_V1_JobSpec.with {
            $0.kind = "noop"
            $0.payload = Data(repeating: 7, count: 5_000)
            $0.maxAttempts = 1
        }
        _ = try await store.jobs.pushJobs([spec, spec], batch: "b")
        let done = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        let dead = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        _ = try await store.saves.applySave(
            .with {
                $0.jobID = UInt64(done.id)
                $0.attempt = UInt32(done.attempt)
                $0.completesJob = true
            }, from: "w1")
        _ = try await store.jobs.failJob(
            id: dead.id, attempt: dead.attempt, worker: "w1", message: "boom", permanent: true)
        let payloads = try await store.pool.read { db in
            try Int64.fetchAll(db, sql: "SELECT job_id FROM tributary_payloads ORDER BY job_id")
        }
        #expect(payloads == [dead.id])
        _ = try await store.jobs.retryJob(id: dead.id)
        let again = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        #expect(again.id == dead.id && again.spec.payload == spec.payload)
    }

    @Test("a claim gives each job its own payload, among jobs pushed without one, whether their ids lie close or far")
    func payloadsAmongJobsWithout() async throws {
        func spec(_ payload: String?, priority: Int32 = 0) -> Tributary_V1_JobSpec {
            .with {
                $0.kind = "noop"
                $0.priority = priority
                if let payload { $0.payload = Data(payload.utf8) }
            }
        }
        // Close together: one range read finds the jobs that have payloads.
        let close = try await store.jobs.pushJobs([spec("a"), spec(nil), spec(nil), spec("d"), spec(nil)], batch: "b")
        let claimed = try await store.jobs.claimJobs(for: "w1", kinds: ["noop"], limit: 5)
        #expect(claimed.map(\.id) == close.ids)
        #expect(claimed.map { String(decoding: $0.spec.payload, as: UTF8.self) } == ["a", "", "", "d", ""])
        // Far apart (a high-priority job pushed long after the others, jobs of another kind between them): each
        // claimed job is looked up.
        let old = try await store.jobs.pushJobs([spec("old")], batch: "b")
        _ = try await store.jobs.pushJobs(Array(repeating: .with { $0.kind = "other" }, count: 20), batch: "b")
        let urgent = try await store.jobs.pushJobs([spec("urgent", priority: 9)], batch: "b")
        let far = try await store.jobs.claimJobs(for: "w3", kinds: ["noop"], limit: 2)
        #expect(far.map(\.id) == [old.ids[0], urgent.ids[0]])
        #expect(urgent.ids[0] - old.ids[0] > 8, "the ids lie too far apart for a range read")
        #expect(far.map { String(decoding: $0.spec.payload, as: UTF8.self) } == ["old", "urgent"])
    }

    @Test("group commits queued on the writer run in the order queued: a later one sees the earlier one's effects")
    func queuedGroupCommitsRunInOrder() async throws {
        _ = try await store.jobs.pushJobs(Array(repeating: .with { $0.kind = "noop" }, count: 3), batch: "b")
        // The first leases every job; the second, queued before the first ran, finds none left.
        let first = store.saves.queueGroupCommit([], thenClaim: [ClaimRequest(worker: "w1", kinds: ["noop"], limit: 3)])
        let second = store.saves.queueGroupCommit(
            [], thenClaim: [ClaimRequest(worker: "w2", kinds: ["noop"], limit: 3)])
        let later = await second.value
        #expect(try later.claims[0].get().isEmpty)
        #expect(try await first.value.claims[0].get().count == 3)
        #expect(first.result != nil, "a written result can be read without waiting")
    }

    @Test("claims of one group commit share the due jobs when there are fewer than they ask for, and take all when not")
    func claimsShareFewJobs() async throws {
        _ = try await store.jobs.pushJobs(Array(repeating: .with { $0.kind = "noop" }, count: 12), batch: "b")
        let three = ["w1", "w2", "w3"].map { ClaimRequest(worker: $0, kinds: ["noop"], limit: 32) }
        // 12 jobs among 3 claims of 32: 4 each.
        let shared = await store.saves.queueGroupCommit([], thenClaim: three).value
        #expect(try shared.claims.map { try $0.get().count } == [4, 4, 4])
        // 5 among 2 of 4: 3 and 2 (a share rounds up; the second gets what is left).
        _ = try await store.jobs.pushJobs(Array(repeating: .with { $0.kind = "noop" }, count: 5), batch: "b")
        let two = ["w1", "w2"].map { ClaimRequest(worker: $0, kinds: ["noop"], limit: 4) }
        let uneven = await store.saves.queueGroupCommit([], thenClaim: two).value
        #expect(try uneven.claims.map { try $0.get().count } == [3, 2])
        // Enough for both: each takes its whole limit; a claim of another kind does not shrink theirs.
        _ = try await store.jobs.pushJobs(Array(repeating: .with { $0.kind = "noop" }, count: 20), batch: "b")
        let full = await store.saves.queueGroupCommit(
            [], thenClaim: two + [ClaimRequest(worker: "w3", kinds: ["other"], limit: 8)]
        ).value
        #expect(try full.claims.map { try $0.get().count } == [4, 4, 0])
        // One share taken by a claim limited to less, the rest goes to the other: 6 jobs, limits 1 and 8.
        _ = try await store.jobs.claimJobs(for: "w9", kinds: ["noop"], limit: 100)
        _ = try await store.jobs.pushJobs(Array(repeating: .with { $0.kind = "noop" }, count: 6), batch: "b")
        let capped = await store.saves.queueGroupCommit(
            [],
            thenClaim: [
                ClaimRequest(worker: "w1", kinds: ["noop"], limit: 1),
                ClaimRequest(worker: "w2", kinds: ["noop"], limit: 8),
            ]
        ).value
        #expect(try capped.claims.map { try $0.get().count } == [1, 5])
    }

    @Test("saves without changes applied together get the verdicts they would get one by one")
    func batchedCompletionsJudgedAlone() async throws {
        _ = try await store.jobs.pushJobs(Array(repeating: .with { $0.kind = "noop" }, count: 6), batch: "b")
        let jobs = try await store.jobs.claimJobs(for: "w1", kinds: ["noop"], limit: 6)
        func save(_ job: ClaimedJob, batch: UInt32 = 0, completes: Bool = true, attempt: Int? = nil)
            -> Tributary_V1_SaveChanges
        {
            .with {
                $0.jobID = UInt64(job.id)
                $0.attempt = UInt32(attempt ?? job.attempt)
                $0.batchIndex = batch
                $0.progressDone = UInt64(batch) + 1
                $0.completesJob = completes
            }
        }
        // jobs[0] is done before the group: its save again is answered as a duplicate.
        _ = try await store.saves.applySaves([(save(jobs[0]), "w1")])
        _ = try await store.jobs.cancelJob(id: jobs[4].id)
        var unknown = save(jobs[5])
        unknown.jobID = 999_999
        let results = try await store.saves.applySaves([
            (save(jobs[0]), "w1"),  // applied before
            (save(jobs[1]), "w1"),  // held: completes
            (save(jobs[2], attempt: 9), "w1"),  // another attempt's
            (save(jobs[3], completes: false), "w1"),  // two saves of one job, in order: one by one
            (save(jobs[3], batch: 1), "w1"),
            (save(jobs[4]), "w1"),  // cancelled
            (unknown, "w1"),
            (save(jobs[5]), "w2"),  // another worker's lease
        ])
        #expect(try results[0].get().outcome.isDuplicate)
        #expect((try? results[1].get()) != nil && (try? results[3].get()) != nil && (try? results[4].get()) != nil)
        func leaseError(_ index: Int) -> LeaseError? {
            guard case .failure(let error) = results[index] else { return nil }
            return error as? LeaseError
        }
        #expect(leaseError(2)?.message.contains("no longer holds its lease") == true)
        #expect(leaseError(5)?.isCancelled == true)
        #expect(leaseError(6)?.isUnknownJob == true)
        #expect(leaseError(7)?.message.contains("no longer holds its lease") == true)
        var states: [JobState?] = []
        for index in [1, 2, 3, 5] { states.append(try await store.jobs.job(id: jobs[index].id)?.state) }
        #expect(states == [.done, .running, .done, .running])
        #expect(try await store.jobs.job(id: jobs[3].id)?.done == 2, "both of its saves applied, in order")
        #expect(try await store.jobs.batchStatus("b").doneJobs == 3)
    }

    @Test("the batched write of job progress looks each job up by id, at every chunk size")
    func batchedProgressUsesRowid() async throws {
        for size in JobStore.chunkSizes {
            let plan = try await store.pool.read { db in
                try Row.fetchAll(
                    db, sql: "EXPLAIN QUERY PLAN \(JobStore.progressUpdateSQL[size]!)",
                    arguments: StatementArguments(Array(repeating: -1, count: 1 + 5 * size))
                ).map { $0["detail"] as String }
            }
            #expect(plan.contains("SEARCH tributary_jobs USING INTEGER PRIMARY KEY (rowid=?)"), "\(size): \(plan)")
        }
    }

    @Test("completions are written in full chunks, then the smallest chunk that holds the rest")
    func completionChunks() {
        let chunks = { (count: Int) in JobStore.chunks(of: count).map { [$0.start, $0.size] } }
        #expect(chunks(0) == [])
        #expect(chunks(1) == [[0, 1]])
        #expect(chunks(3) == [[0, 4]])
        #expect(chunks(64) == [[0, 64]])
        #expect(chunks(65) == [[0, 64], [64, 1]])
        #expect(chunks(130) == [[0, 64], [64, 64], [128, 2]])
    }
}

extension JobFencingTests {
    @Test("reopening puts back the jobs left running, counted per batch; a lost last attempt leaves its job dead")
    func jobsLeftRunningCounted() async throws {
        let spec = JobSpec(kind: "noop")
        let lastTry = Tributary_V1_JobSpec.with {
            $0.kind = "noop"
            $0.maxAttempts = 1
        }
        _ = try await store.jobs.pushJobs([spec, spec, spec], batch: "a")
        _ = try await store.jobs.pushJobs([lastTry], batch: "b")
        let claimed = try await store.jobs.claimJobs(for: "w1", kinds: ["noop"], limit: 10)
        #expect(claimed.count == 4)
        // Ids follow the push order: the smallest is one of batch a's.
        let first = try #require(claimed.min { $0.id < $1.id })
        _ = try await store.saves.applySave(
            .with {
                $0.jobID = UInt64(first.id)
                $0.attempt = UInt32(first.attempt)
                $0.completesJob = true
            }, from: "w1")
        try store.close()
        let reopened = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        #expect(
            reopened.jobsLeftRunning == [
                .init(batch: "a", requeued: 2, dead: 0), .init(batch: "b", requeued: 0, dead: 1),
            ])
        try reopened.close()
    }
}

/// Join rows are written many per statement at the end of a batch; a row that clears the same set first writes
/// what the batch gathered for it.
@Suite("Join rows: gathered per batch, written before a clear")
struct JoinRowsTests {
    static let modelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string"}], "uniqueness": [["login"]]},
          {"name": "Team", "attributes": [{"name": "name", "type": "string"}], "uniqueness": [["name"]],
           "relationships": [{"name": "members", "destination": "User", "toMany": true}]}]}
        """

    /// Saves `count` users and teams named `names` with the given members (indexes into the users), in one change
    /// set, and returns each team's members' logins, read with a separate connection.
    func save(users count: Int, teams names: [String], members: [[Int]]) async throws -> [String: Set<String>] {
        let store = try TemporaryStore(modelJSON: Self.modelJSON)
        let users = (0..<count).map { _ in UUID() }
        let changes = Tributary_V1_ChangeSet.with {
            $0.batches = [
                .inserting("User", ids: users, [.strings("login", (0..<count).map { "user\($0)" })]),
                .inserting(
                    "Team", ids: names.map { _ in UUID() },
                    [.strings("name", names), .destinations("members", members.map { $0.map { users[$0] } })]),
            ]
        }
        _ = try await store.store.saves.applySave(SaveRequest(changes: changes), from: "test")
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: store.directory.path("store.sqlite"), configuration: configuration)
        return try await queue.read { db in
            var teams: [String: Set<String>] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT t.name, u.login FROM Team_members m JOIN User u ON u._rowid = m.destination
                    JOIN Team t ON t._rowid = m.source
                    """)
            {
                teams[row[0], default: []].insert(row[1])
            }
            return teams
        }
    }

    @Test("a team given 40 members and then, in the same batch, one member by its name has that one member")
    func clearAfterGatheredRows() async throws {
        // Row 0: a new team with 40 members (more than one 32-row statement, gathered). Row 1: the same name, so
        // the same team, with only the 41st user: its set replaces the 40.
        let teams = try await save(users: 41, teams: ["core", "core"], members: [Array(0..<40), [40]])
        #expect(teams == ["core": ["user40"]])
    }

    @Test("33 members of one team are all written, across a 32-row statement and a single one")
    func gatheredRowsAllWritten() async throws {
        let teams = try await save(users: 33, teams: ["core"], members: [Array(0..<33)])
        #expect(teams["core"]?.count == 33)
    }
}
