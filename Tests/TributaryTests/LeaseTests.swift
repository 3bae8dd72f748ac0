import Foundation
import GRDB
import Logging
import Testing
import ZeroMQ

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// A worker played by hand over a raw DEALER, so it can fall silent and come back as a zombie.
struct RawWorker {
    let socket: ZMQSocket
    let context: ZMQContext
    let endpoint: String

    init(context: ZMQContext, endpoint: String) throws {
        socket = try context.makeSocket(.dealer)
        try socket.connect(endpoint)
        self.context = context
        self.endpoint = endpoint
    }

    /// Another peer of the same coordinator (a connection of its own).
    func anotherPeer() throws -> RawWorker { try RawWorker(context: context, endpoint: endpoint) }

    func send(_ body: Tributary_V1_Envelope.OneOf_Body, requestID: UInt64 = 0) throws {
        try socket.send(Wire.frames(Wire.envelope(requestID, body)))
    }

    /// The next message, within 30 seconds (a deadline: other suites' tests may hold the machine for seconds).
    func receive() throws -> Tributary_V1_Envelope {
        guard try socket.waitForInput(milliseconds: 30_000), let frames = try socket.receive() else {
            throw TimedOut(what: "a message from the coordinator")
        }
        return try Wire.decode(frames[...])
    }

    func hello(heartbeatMs: UInt32) throws {
        try send(
            .workerHello(
                .with {
                    $0.name = "raw"
                    $0.heartbeatIntervalMs = heartbeatMs
                    $0.jobKinds = ["noop"]
                }), requestID: 1)
        guard case .welcome = try receive().body else { throw TimedOut(what: "a welcome") }
    }
}

@Suite("Integration: leases, heartbeats and zombies", .serialized)
struct LeaseTests {
    /// Runs `body` with a raw worker registered (as `w1`), with a credit of `credit`, at a coordinator without a pool,
    /// and a client of it; returns the coordinator's exit status.
    func withRawWorker(credit: UInt32 = 1, _ body: (RawWorker, JobClient) async throws -> Void) async throws -> Int32 {
        let directory = try TemporaryDirectory()
        return try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let context = try ZMQContext()
            defer { context.terminate() }
            let worker = try RawWorker(context: context, endpoint: coordinator.process.listenEndpoint)
            defer { worker.socket.close() }
            try worker.hello(heartbeatMs: 10_000)
            try worker.send(.workerReady(.with { $0.credit = credit }))
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            try await body(worker, client)
            await client.close()
        }.1
    }

    @Test(
        "a worker that falls silent loses its lease; the job runs again elsewhere; the zombie's late save applies nothing"
    )
    func heartbeatExpiryAndZombie() async throws {
        let directory = try TemporaryDirectory()
        let (job, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let context = try ZMQContext()
            let zombie = try RawWorker(context: context, endpoint: coordinator.process.listenEndpoint)
            try zombie.hello(heartbeatMs: 100)
            try zombie.send(.workerReady(.with { $0.credit = 1 }))
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            let id = try await client.push([JobSpec(kind: "noop")]).ids[0]
            guard case .jobAssignment(let assignment) = try zombie.receive().body else {
                throw TimedOut(what: "the assignment")
            }
            #expect(assignment.jobID == UInt64(id) && assignment.attempt == 1)

            // Silent from here: after 3 missed heartbeats (300 ms) the lease is gone and the job is queued again.
            try await waitUntil("the lease to expire") { try await client.job(id).errors.count == 1 }
            let worker = InProcessWorker.start(endpoint: coordinator.process.listenEndpoint, handlers: [])
            defer { worker.cancel() }
            try await waitUntil("the job to run again and finish") { try await client.job(id).state == .done }

            // The zombie wakes up: registers again and sends its old attempt's completion. Refused.
            try zombie.hello(heartbeatMs: 100)
            try zombie.send(
                .saveChanges(
                    .with {
                        $0.jobID = UInt64(id)
                        $0.attempt = assignment.attempt
                        $0.batchIndex = 0
                        $0.completesJob = true
                    }), requestID: 7)
            let answer = try zombie.receive()
            guard case .saveAck(let ack) = answer.body else {
                throw TimedOut(what: "an answer to the zombie's save")
            }
            #expect(ack.duplicate, "the batch was committed by the second attempt: the zombie's copy applies nothing")
            zombie.socket.close()
            context.terminate()
            let job = try await client.job(id)
            await client.close()
            return job
        }
        #expect(exitStatus == 0)
        #expect(job.state == .done && job.attempt == 2)
        #expect(job.errors.first?.message.contains("missed 3 heartbeats") == true)
    }

    @Test(
        "a hello naming as its previous id a worker still registered takes none of its jobs; one naming more than 1,024 held jobs is refused"
    )
    func heldJobsOfALiveWorker() async throws {
        let exitStatus = try await withRawWorker { worker, client in
            let id = try await client.push([JobSpec(kind: "noop")]).ids[0]
            guard case .jobAssignment(let assignment) = try worker.receive().body else {
                throw TimedOut(what: "the assignment")
            }
            let other = try worker.anotherPeer()
            defer { other.socket.close() }
            var hello = Tributary_V1_WorkerHello.with {
                $0.name = "other"
                $0.jobKinds = ["noop"]
                $0.previousWorkerID = "w1"
                $0.heldJobs = [
                    .with {
                        $0.jobID = assignment.jobID
                        $0.attempt = assignment.attempt
                    }
                ]
            }
            try other.send(.workerHello(hello), requestID: 1)
            guard case .welcome(let welcome) = try other.receive().body else { throw TimedOut(what: "a welcome") }
            #expect(welcome.workerID == "w2")
            // The job is still the first worker's: its completion is taken.
            try worker.send(
                .saveChanges(
                    .with {
                        $0.jobID = UInt64(id)
                        $0.attempt = assignment.attempt
                        $0.completesJob = true
                    }), requestID: 2)
            let answer = try worker.receive()
            guard case .saveAck(let ack) = answer.body else {
                throw TimedOut(what: "an ack of the first worker's completion, got \(answer.body as Any)")
            }
            #expect(ack.jobID == UInt64(id) && !ack.duplicate)
            hello.heldJobs = Array(repeating: hello.heldJobs[0], count: 1_025)
            try other.send(.workerHello(hello), requestID: 3)
            guard case .error(let error) = try other.receive().body else { throw TimedOut(what: "a refusal") }
            #expect(error.code == .invalidRequest && error.message.contains("at most 1024"), "\(error.message)")
        }
        #expect(exitStatus == 0)
    }

    @Test(
        "a worker that says hello again on its connection keeps the attempt it names as running; its other job goes back"
    )
    func helloAgainKeepsHeldJobs() async throws {
        let exitStatus = try await withRawWorker(credit: 2) { worker, client in
            let ids = try await client.push(Array(repeating: JobSpec(kind: "noop"), count: 2)).ids
            var assignments: [Tributary_V1_JobAssignment] = []
            while assignments.count < 2 {
                guard case .jobAssignment(let assignment) = try worker.receive().body else {
                    throw TimedOut(what: "two assignments")
                }
                assignments.append(assignment)
            }
            let (kept, dropped) = (assignments[0], assignments[1])
            try worker.send(
                .workerHello(
                    .with {
                        $0.name = "raw"
                        $0.jobKinds = ["noop"]
                        $0.heartbeatIntervalMs = 10_000
                        $0.previousWorkerID = "w1"
                        $0.heldJobs = [
                            .with {
                                $0.jobID = kept.jobID
                                $0.attempt = kept.attempt
                            }
                        ]
                    }), requestID: 2)
            guard case .welcome(let welcome) = try worker.receive().body else { throw TimedOut(what: "a welcome") }
            #expect(welcome.workerID == "w2")
            try worker.send(
                .saveChanges(
                    .with {
                        $0.jobID = kept.jobID
                        $0.attempt = kept.attempt
                        $0.completesJob = true
                    }), requestID: 3)
            let answer = try worker.receive()
            guard case .saveAck(let ack) = answer.body else {
                throw TimedOut(what: "an ack of the kept job's completion, got \(answer.body as Any)")
            }
            #expect(ack.jobID == kept.jobID && !ack.duplicate)
            try await waitUntil("the other job to go back to the queue") {
                try await client.job(Int64(dropped.jobID)).state == .queued
            }
            let done = try await client.job(Int64(kept.jobID))
            #expect(done.state == .done && done.attempt == 1 && done.errors.isEmpty)
            #expect(Set(ids.map(UInt64.init)) == [kept.jobID, dropped.jobID])
        }
        #expect(exitStatus == 0)
    }

    @Test("the save that completes a job may ask for the next one: it comes with the ack, with no WorkerReady")
    func creditWithCompletion() async throws {
        let exitStatus = try await withRawWorker { worker, client in
            let ids = try await client.push(Array(repeating: JobSpec(kind: "noop"), count: 2)).ids
            guard case .jobAssignment(let first) = try worker.receive().body else {
                throw TimedOut(what: "the first assignment")
            }
            try worker.send(
                .saveChanges(
                    .with {
                        $0.jobID = first.jobID
                        $0.attempt = first.attempt
                        $0.completesJob = true
                        $0.credit = 1
                    }), requestID: 2)
            // The ack and the second job, in either order; without the save's credit the second never comes.
            var bodies = [try worker.receive().body, try worker.receive().body]
            bodies.sort { a, _ in if case .saveAck = a { true } else { false } }
            guard case .saveAck(let ack) = bodies[0], case .jobAssignment(let second) = bodies[1] else {
                throw TimedOut(what: "an ack and the next assignment, got \(bodies)")
            }
            #expect(ack.jobID == first.jobID && !ack.duplicate)
            #expect(Set([first.jobID, second.jobID]) == Set(ids.map { UInt64($0) }))
        }
        #expect(exitStatus == 0)
    }

    @Test("a completing save refused before it is merged still adds its credit: the next job comes")
    func creditOfRefusedSave() async throws {
        let exitStatus = try await withRawWorker { worker, client in
            let ids = try await client.push(Array(repeating: JobSpec(kind: "noop"), count: 2)).ids
            guard case .jobAssignment(let first) = try worker.receive().body else {
                throw TimedOut(what: "the first assignment")
            }
            // Refused by the router's checks (progress over 2^53), before the writer sees it.
            try worker.send(
                .saveChanges(
                    .with {
                        $0.jobID = first.jobID
                        $0.attempt = first.attempt
                        $0.completesJob = true
                        $0.progressDone = UInt64(1) << 60
                        $0.credit = 1
                    }), requestID: 2)
            var bodies = [try worker.receive().body, try worker.receive().body]
            bodies.sort { a, _ in if case .error = a { true } else { false } }
            guard case .error(let error) = bodies[0], case .jobAssignment(let second) = bodies[1] else {
                throw TimedOut(what: "the refusal and the next assignment, got \(bodies)")
            }
            #expect(error.code == .invalidRequest && error.message.contains("progress_done"))
            #expect(Set([first.jobID, second.jobID]) == Set(ids.map { UInt64($0) }))
        }
        #expect(exitStatus == 0)
    }

    @Test("a push sent after a save, in one message, sees the save committed: a finished job's unique key is free")
    func pushAfterSave() async throws {
        let exitStatus = try await withRawWorker { peer, client in
            let keyed = JobSpec(kind: "noop", uniqueKey: "nightly")
            let firstID = try await client.push([keyed]).ids[0]
            guard case .jobAssignment(let job) = try peer.receive().body else {
                throw TimedOut(what: "the assignment")
            }
            // Its completion, then a push of the same key, in one message: the push is written after the save.
            let save = Wire.envelope(
                2,
                .saveChanges(
                    .with {
                        $0.jobID = job.jobID
                        $0.attempt = job.attempt
                        $0.completesJob = true
                    }))
            let push = Wire.envelope(3, .pushJobs(.with { $0.jobs = [keyed.wire] }))
            try peer.socket.send([Wire.signature, try save.serializedData(), try push.serializedData()])
            var replies: [UInt64: Tributary_V1_Envelope] = [:]
            while replies.count < 2 {
                let reply = try peer.receive()
                replies[reply.requestID] = reply
            }
            guard case .saveAck = replies[2]?.body, case .pushReply(let pushed) = replies[3]?.body else {
                throw TimedOut(what: "an ack and a push reply, got \(replies)")
            }
            #expect(
                pushed.duplicates.isEmpty && pushed.jobIds.first != UInt64(firstID), "a new job, not the finished one")
        }
        #expect(exitStatus == 0)
    }

    @Test("a zombie's save for a job now leased to another attempt is refused with STALE_LEASE and changes nothing")
    func zombieStaleLease() async throws {
        let directory = try TemporaryDirectory()
        let store = try RootStore.open(path: directory.path("store.sqlite"), model: DemoData.model)
        let id = try await store.jobs.pushJobs([JobSpec(kind: "noop")], batch: "b").ids[0]
        let first = try #require(try await store.jobs.claimJob(for: "w1", kinds: ["noop"]))
        try await store.jobs.requeueJobs(of: "w1", reason: "silent")
        let second = try #require(try await store.jobs.claimJob(for: "w2", kinds: ["noop"]))
        #expect(second.attempt == 2)
        var save = Tributary_V1_SaveChanges()
        save.jobID = UInt64(id)
        save.attempt = UInt32(first.attempt)
        save.changes.batches = [
            .inserting("User", "login", "zombie")
        ]
        let error = try await #require(throws: LeaseError.self) { try await store.saves.applySave(save, from: "w1") }
        #expect(error.message.contains("no longer holds its lease"))
        let users = try await store.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM User") }
        #expect(users == 0)
    }

    @Test("SIGTERM to a worker process: it exits 0")
    func workerSigterm() async throws {
        let directory = try TemporaryDirectory()
        let (status, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let worker = Process()
            worker.executableURL = Binaries.url("tributary-worker")
            worker.arguments = ["--connect", coordinator.process.listenEndpoint, "--log-level", "critical"]
            try worker.run()
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            try await waitUntil("the worker to register") { try await client.status().workers.count == 1 }
            worker.terminate()
            await worker.exited()
            try await waitUntil("the worker's goodbye") { try await client.status().workers.isEmpty }
            await client.close()
            return worker.terminationStatus
        }
        #expect(status == 0)
        #expect(exitStatus == 0)
    }
}

@Suite("Integration: job progress on the feed", .serialized)
struct ProgressFeedTests {
    @Test("each commit of an import job publishes its progress on the $jobs topic, ending with done")
    func progressPublished() async throws {
        let directory = try TemporaryDirectory()
        let input = DemoData.pullRequests(count: 300, users: 10)
        let (progress, exitStatus) = try await TestCoordinator.with(in: directory, workers: 1) { coordinator in
            let subscriber = try JobsTopicSubscriber(feed: coordinator.process.feedEndpoint)
            defer { subscriber.close() }
            let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
            var spec = ImportJob.spec(entity: "PullRequest", payload: input, rows: 300, batchSize: 100)
            spec.total = 300
            let id = try await client.push([spec]).ids[0]
            var seen: [Tributary_V1_JobProgress] = []
            let deadline = ContinuousClock.now + .seconds(60)
            while seen.last?.state != "done" {
                let progress = try subscriber.next(before: deadline)
                if progress.jobID == UInt64(id) { seen.append(progress) }
            }
            await client.close()
            return seen
        }
        #expect(exitStatus == 0)
        #expect(progress.map(\.done) == [100, 200, 300])
        #expect(progress.map(\.state) == ["running", "running", "done"] && progress.allSatisfy { $0.total == 300 })
    }
}
