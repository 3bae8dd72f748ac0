import Foundation
import GRDB
import Testing
import TributaryCluster
import TributaryCommandSupport
import TributaryCore
import TributaryProtocol

@testable import TributaryClient
@testable import TributaryDemo

extension ClusterFailoverTests {
    @Test(
        "a standby answers NOT_PRIMARY naming the primary; a client given the standby first moves to the primary, and to the standby once it takes over"
    )
    func clientsFollowNotPrimary() async throws {
        let bed = try await ClusterTestBed()
        let (a, b, c) = try await bed.primaryWithTwoStandbys()
        let epochA = try #require(try await bed.sync.read()?.epoch)

        // The standby's endpoint alone: every request is answered NOT_PRIMARY, naming a, and nothing is done.
        let alone = try CoordinatorConnection(endpoint: b.listen)
        let answer = try await alone.exchange(.statusRequest(.init()), requires: [], timeout: .seconds(10))
        guard case .error(let error) = answer.body else {
            Issue.record("the standby answered \(String(describing: answer.body))")
            return
        }
        #expect(error.code == .notPrimary)
        #expect(error.primary.name == "a" && error.primary.endpoint == a.listen && error.primary.feed == a.feed)
        #expect(error.primary.epoch == epochA)
        #expect(error.message.contains("'b' is a standby") && error.message.contains(a.listen), "\(error.message)")
        let before = try Self.allJobs(in: a)
        await #expect(throws: ProtocolError.self) {
            _ = try await JobClient(endpoint: b.listen).push([JobSpec(kind: "noop")])
        }
        #expect(try Self.allJobs(in: a) == before, "a push sent to the standby was done")
        await alone.close()
        // As a user meets it: the command names the primary to use instead.
        let refused = try await Binaries.run("tributary", ["status", "--listen", b.listen])
        #expect(refused.status != 0)
        #expect(refused.error.contains("NOT_PRIMARY") && refused.error.contains(a.listen), "\(refused.error)")

        // The standby named first: the client is told where a is and pushes there; each push is done once.
        let client = try JobClient(endpoint: "\(b.listen),\(a.listen),\(c.listen)")
        var acknowledged: [Int64] = []
        for _ in 0..<20 { acknowledged += try await client.push([JobSpec(kind: "noop")]).ids }
        #expect(try Self.allJobs(in: a) == before.union(acknowledged))
        #expect(try Self.allJobs(in: a).count == before.count + 20)

        // a is killed: a standby no longer answers NOT_PRIMARY but serves, and the same client follows it there.
        a.kill()
        let (promoted, other) = try await Self.promoted(b, c)
        let later = try await client.push([JobSpec(kind: "noop")]).ids
        #expect(try Self.jobs(later, in: promoted) == Set(later))
        #expect(try Self.jobs(acknowledged, in: promoted) == Set(acknowledged))
        await client.close()
        #expect(try await other.stop() == 0)
        #expect(try await promoted.stop() == 0)
    }

    /// Waits for one of `b` and `c` to serve as primary; returns it, then the other.
    static func promoted(_ b: ClusterNodeProcess, _ c: ClusterNodeProcess) async throws -> (
        ClusterNodeProcess, ClusterNodeProcess
    ) {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await b.waitFor("ready", timeout: .seconds(20))
                return true
            }
            group.addTask {
                try await c.waitFor("ready", timeout: .seconds(20))
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() == true ? (b, c) : (c, b)
        }
    }
}

extension ClusterFailoverTests {
    @Test(
        "a standby's HTTP endpoint: /healthz ok, /readyz 503 naming the primary, /api/status and /metrics its own replication, the API refused NOT_PRIMARY; promoted, the same port serves the primary's"
    )
    func standbyStatus() async throws {
        let bed = try await ClusterTestBed()
        let ports = try LoopbackPorts.free(2)
        let http = { (index: Int) in ["--http", "127.0.0.1:\(ports[index])"] }
        let a = try bed.node("a", arguments: http(0))
        try await a.waitFor("ready")
        let b = try bed.node("b", arguments: http(1))
        try await b.waitFor("standby of=a")
        let url = String(try await b.waitFor("http=").dropFirst("tributary-coordinator http=".count))
        try await waitUntil("b to be recorded in sync") { (try? await bed.sync.read())??.standbys == ["b"] }
        let epoch = try #require(try await bed.sync.read()?.epoch)
        let client = try JobClient(endpoint: a.listen)
        _ = try await client.push((0..<5).map { _ in JobSpec(kind: "noop") })
        let lastRecord = try #require(try await client.status().cluster).lastRecord
        await client.close()

        #expect(try await HTTPRequests.send(url + "healthz").status == 200)
        let ready = try await HTTPRequests.send(url + "readyz")
        #expect(ready.status == 503)
        #expect(ready.body.contains(#""primary":"a""#) && ready.body.contains(a.listen), "\(ready.body)")
        // Its store holds every acknowledged record: the push above was acknowledged once b had it.
        let status = try #require(
            try JSONSerialization.jsonObject(with: Data(try await HTTPRequests.send(url + "api/status").body.utf8))
                as? [String: Any])
        #expect(status["role"] as? String == "standby" && status["node"] as? String == "b")
        #expect((status["epoch"] as? NSNumber)?.int64Value == epoch)
        #expect((status["primary"] as? [String: Any])?["endpoint"] as? String == a.listen)
        #expect((status["lastRecord"] as? NSNumber)?.uint64Value ?? 0 >= lastRecord, "\(status)")
        let metrics = try await HTTPRequests.send(url + "metrics").body
        #expect(metrics.contains("tributary_cluster_primary 0"), "\(metrics)")
        #expect(metrics.contains("tributary_cluster_epoch \(epoch)"))
        #expect(metrics.contains("tributary_cluster_standby_last_record "))
        let jobs = try await HTTPRequests.send(url + "api/jobs")
        #expect(jobs.status == 503)
        #expect(jobs.body.contains("NOT_PRIMARY") && jobs.body.contains("'a'"), "\(jobs.body)")
        let primaryMetrics = try await HTTPRequests.send("http://127.0.0.1:\(ports[0])/metrics").body
        #expect(primaryMetrics.contains("tributary_cluster_primary 1"), "\(primaryMetrics)")
        // A worker given the standby's endpoint alone is refused NOT_PRIMARY, and waits for it to lead.
        let worker = try StartedProcess.start("tributary-worker", ["--connect", b.listen, "--heartbeat-ms", "200"])
        defer { if worker.process.isRunning { kill(worker.pid, SIGKILL) } }
        let waiting = try await worker.waitForError(containing: "waiting for the member to be primary")
        #expect(waiting.contains("NOT_PRIMARY") || waiting.contains(a.listen), "\(waiting)")

        // a is stopped: b takes over (the sync state names it), and the port it served as a standby is the
        // primary's now.
        #expect(try await a.stop() == 0)
        try await b.waitFor("ready", timeout: .seconds(20))
        try await waitUntil("b's endpoint to be the primary's") {
            (try? await HTTPRequests.send(url + "readyz").status) == 200
        }
        let promoted = try await HTTPRequests.send(url + "metrics").body
        #expect(promoted.contains("tributary_cluster_primary 1"))
        #expect(!promoted.contains("tributary_cluster_standby_lag_records{standby=\"b\""))
        // The waiting worker registers with b now and runs its jobs (written once a, back as b's standby, has them).
        try a.restart()
        try await a.waitFor("standby of=b")
        let onB = try JobClient(endpoint: b.listen)
        _ = try await onB.push([JobSpec(kind: "noop")], batch: "after-promotion")
        let done = try await withTimeout("the waiting worker to run a job on b", .seconds(30)) {
            try await onB.waitForBatch("after-promotion")
        }
        #expect(done.doneJobs == 1, "\(done)")
        await onB.close()
        kill(worker.pid, SIGTERM)
        #expect(try await worker.waitForExit() == 0)
        #expect(try await a.stop() == 0)
        #expect(try await b.stop() == 0)
    }
}

extension ClusterFailoverTests {
    @Test("the Python pusher and worker given the standby first are told NOT_PRIMARY and move to the primary")
    func pythonClientsFollowNotPrimary() async throws {
        try #require(
            FileManager.default.fileExists(
                atPath: PythonExampleTests.example.appendingPathComponent("generated/tributary_pb2.py").path),
            "examples/python/generated is missing: run `make python-example` (part of `make test`)")
        let bed = try await ClusterTestBed()
        let a = try bed.node("a")
        try await a.waitFor("ready")
        let b = try bed.node("b")
        try await Self.pair(a, b, sync: bed.sync)
        let members = "\(b.listen),\(a.listen)"
        let rows = try bed.directory.write("rows.ndjson", DemoData.pullRequests(count: 300, users: 20))

        let pushed = try await PythonExampleTests.finish(
            try PythonExampleTests.start(
                "pusher.py", ["--listen", members, "--entity", "PullRequest", "--file", rows, "--chunk", "100"]))
        #expect(pushed.status == 0, "pusher: \(pushed.error.joined(separator: "\n"))")
        #expect(pushed.output.contains { $0.contains("pushed 3 jobs") }, "\(pushed.output)")
        #expect(try a.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM tributary_jobs") } == 3)

        let worker = try PythonExampleTests.start("worker.py", ["--listen", members])
        let registered = try await worker.waitForError(containing: "registered as")
        #expect(registered.contains("at \(a.listen)"), "\(registered)")
        let client = try JobClient(endpoint: a.listen)
        let job = try await client.push([
            JobSpec(
                kind: "py-import", payload: Data(try String(contentsOfFile: rows, encoding: .utf8).utf8),
                arguments: ["entity": "PullRequest"])
        ]).ids[0]
        try await waitUntil("the Python worker to finish the job") {
            try a.read { db in
                try String.fetchOne(db, sql: "SELECT state FROM tributary_jobs WHERE id = ?", arguments: [job])
            } == "done"
        }
        #expect(try a.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM PullRequest") } == 300)
        await client.close()
        worker.kill()
        _ = try? await PythonExampleTests.finish(worker)
        #expect(try await b.stop() == 0)
        #expect(try await a.stop() == 0)
    }
}

extension ClusterFailoverTests {
    @Test(
        "a relay given the members, a standby first: its subscriber's requests reach the primary, and after the primary is killed the feed resumes from the new one, every seq once"
    )
    func relayFollowsThePrimary() async throws {
        let bed = try await ClusterTestBed()
        let (a, b, c) = try await bed.primaryWithTwoStandbys()
        let members = [b, a, c]
        let (relay, relayFeed, relayListen) = try await RelayTests.startRelay(
            upstreamFeed: members.map(\.feed).joined(separator: ","),
            upstreamListen: members.map(\.listen).joined(separator: ","))
        defer { relay.kill() }

        // A request through the relay is answered by the primary: the standby named first never answers it.
        let behind = try JobClient(endpoint: relayListen)
        #expect(try await behind.status().cluster?.node == "a")
        await behind.close()

        var options = ChangeFeed.Options()
        options.since = 0
        let feed = try ChangeFeed(feed: relayFeed, jobs: relayListen, options: options)
        let seqs = Locked<[UInt64]>([])
        let follower = Task {
            for try await event in feed {
                guard case .didSave(let save) = event else { continue }
                seqs.withLock { $0.append(save.seq) }
            }
        }
        defer { follower.cancel() }
        // A view saving through the members: each save is a commit of the feed.
        let writer = try await ViewContext.start(
            feed: members.map(\.feed).joined(separator: ","), jobs: members.map(\.listen).joined(separator: ","),
            model: ViewContextTests.model, entities: ["User"], name: "writer")
        func save(_ logins: Range<Int>) async throws -> UInt64 {
            var last: UInt64 = 0
            for login in logins {
                try await writer.context.perform { context in try context.insert("User")["login"] = .string("u\(login)")
                }
                last = try await writer.save().seq
            }
            return last
        }
        let before = try await save(0..<10)
        try await waitUntil("the relay's subscriber to reach seq \(before)") {
            seqs.value.last.map { $0 >= before } ?? false
        }

        a.kill()
        let (promoted, other) = try await Self.promoted(b, c)
        let last = try await save(10..<20)
        #expect(last > before)
        try await waitUntil("the relay's subscriber to reach seq \(last) from the new primary", timeout: .seconds(60)) {
            seqs.value.last.map { $0 >= last } ?? false
        }
        #expect(seqs.value == Array(1...last), "the relay's subscriber's seqs run from 1 without a gap or a repeat")
        follower.cancel()
        await feed.close()
        await writer.close()
        kill(relay.pid, SIGTERM)
        #expect(try await relay.waitForExit() == 0, "the relay did not stop cleanly on SIGTERM")
        #expect(try await other.stop() == 0)
        #expect(try await promoted.stop() == 0)
    }
}
