import Foundation
import GRDB
import Testing
import TributaryCluster
import TributaryCommandSupport
import TributaryCore

@testable import TributaryClient
@testable import TributaryDemo

/// Coordinators of a cluster as processes (docs/failover.md), with a real etcd: the primary's acknowledged writes
/// are on its standby when it is SIGKILLed; the standby takes over under a newer epoch; with no standby left its
/// writes are held (strict) until the old primary comes back as a standby and catches up.
@Suite("Failover: coordinators of a cluster", .serialized)
struct ClusterFailoverTests {
    /// The jobs of `ids` in a node's store, each id once.
    static func jobs(_ ids: [Int64], in node: ClusterNodeProcess) throws -> Set<Int64> {
        try node.read { db in
            Set(try Int64.fetchAll(db, sql: "SELECT id FROM tributary_jobs").filter { Set(ids).contains($0) })
        }
    }

    @Test(
        "SIGKILL the primary: the standby leads within 10 s with every acknowledged push; its writes wait for a standby until the old primary rejoins"
    )
    func killThePrimary() async throws {
        let bed = try await ClusterTestBed()
        let sync = bed.sync
        let a = try bed.node("a")
        let first = try await a.waitFor("primary")
        try await a.waitFor("ready")
        let b = try bed.node("b")
        #expect(
            try await b.waitFor("standby")
                == "tributary-coordinator standby of=a \(first.dropFirst("tributary-coordinator primary ".count))")
        try await waitUntil("b to be recorded in sync") { (try? await sync.read())??.standbys == ["b"] }

        // Acknowledged by a: so on b too.
        let client = try JobClient(endpoint: a.listen)
        let epochA = Int64(first.split(separator: "=").last ?? "") ?? 0
        // a's status names its cluster and its standby, in sync; nothing blocked.
        let status = try #require(try await client.status().cluster)
        #expect(status.cluster == ClusterTestBed.cluster && status.node == "a" && status.epoch == epochA)
        #expect(status.standbys.map(\.name) == ["b"] && status.standbys.allSatisfy(\.inSync))
        #expect(!status.writesBlocked)
        var acknowledged: [Int64] = []
        for _ in 0..<50 {
            acknowledged += try await client.push((0..<10).map { _ in JobSpec(kind: "noop") }).ids
        }
        await client.close()
        a.kill()
        let killed = ContinuousClock.now
        let promoted = try await b.waitFor("primary", timeout: .seconds(20))
        try await b.waitFor("ready")
        let takeover = ContinuousClock.now - killed
        #expect(takeover < .seconds(10), "b served as primary \(takeover) after a was killed")
        let epochB = Int64(promoted.split(separator: "=").last ?? "") ?? 0
        #expect(epochB > epochA)
        #expect(try Self.jobs(acknowledged, in: b) == Set(acknowledged))
        #expect(try await sync.read() == SyncState(epoch: epochB, leader: "b", standbys: []))

        // With no standby, b commits a push and holds it: not acknowledged until a standby has it.
        let later = try JobClient(endpoint: b.listen)
        let before = try b.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM tributary_jobs") ?? 0 }
        let answered = Locked(false)
        let push = Task {
            defer { answered.withLock { $0 = true } }
            return try await later.push([JobSpec(kind: "noop")]).ids
        }
        try await waitUntil("b to commit the push") {
            try b.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM tributary_jobs") ?? 0 } > before
        }
        let committed = try b.read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM tributary_jobs") ?? 0 }
        #expect(!answered.value, "b acknowledged a push no standby holds")
        // Its status says so: writes blocked, the push held.
        let blocked = try #require(try await later.status().cluster)
        #expect(blocked.node == "b" && blocked.epoch == epochB && blocked.writesBlocked && blocked.heldWrites >= 1)
        #expect(
            try a.read { db in
                try Int64.fetchOne(db, sql: "SELECT count(*) FROM tributary_jobs WHERE id = ?", arguments: [committed])
            } == 0)
        // a comes back: the sync state names b alone, so it follows b, catches up and releases the push.
        try a.restart()
        try await a.waitFor("standby")
        let pushed = try await push.value
        #expect(pushed == [committed])
        #expect(try Self.jobs(acknowledged + pushed, in: a) == Set(acknowledged + pushed))
        try await waitUntil("a to be recorded in sync") { (try? await sync.read())??.standbys == ["a"] }
        await later.close()
        #expect(try await b.stop() == 0)
        #expect(try await a.stop() == 0)
    }
}

extension ClusterFailoverTests {
    /// The jobs in a node's store.
    static func allJobs(in node: ClusterNodeProcess) throws -> Set<Int64> {
        try node.read { db in Set(try Int64.fetchAll(db, sql: "SELECT id FROM tributary_jobs")) }
    }

    /// A client pushing one job after another to `endpoint` until cancelled, and the ids it was answered with.
    static func pushWithoutPause(to endpoint: String) -> (Locked<[Int64]>, Task<Void, any Error>) {
        let acknowledged = Locked<[Int64]>([])
        let pusher = Task {
            let client = try JobClient(endpoint: endpoint)
            while !Task.isCancelled {
                if let ids = try? await client.push([JobSpec(kind: "noop")]).ids {
                    acknowledged.withLock { $0 += ids }
                }
            }
            await client.close()
        }
        return (acknowledged, pusher)
    }

    /// Waits for `b`, started once `a` served as primary, to be its standby in sync.
    static func pair(_ a: ClusterNodeProcess, _ b: ClusterNodeProcess, sync: ClusterSyncRecord) async throws {
        try await b.waitFor("standby of=\(a.name)")
        try await waitUntil("b to be recorded in sync") { (try? await sync.read())??.standbys == [b.name] }
    }

    @Test(
        "a standby with a new store, behind the records the primary keeps, catches up from its snapshot while the primary serves"
    )
    func newStandbyFromSnapshot() async throws {
        let bed = try await ClusterTestBed()
        let sync = bed.sync
        let node = { (name: String) in try bed.node(name) }
        let a = try node("a")
        try await a.waitFor("ready")
        let b = try node("b")
        try await Self.pair(a, b, sync: sync)
        var client = try JobClient(endpoint: a.listen)
        var acknowledged = try await client.push((0..<200).map { _ in JobSpec(kind: "noop") }).ids
        await client.close()
        // a hands over (graceful: it resigns); b's records start at its promotion, so a store that holds none of
        // the records before cannot follow from them.
        #expect(try await a.stop() == 0)
        try await b.waitFor("primary")
        try await b.waitFor("ready")
        try a.restart()
        try await a.waitFor("standby")
        try await waitUntil("a to be recorded in sync") { (try? await sync.read())??.standbys == ["a"] }
        client = try JobClient(endpoint: b.listen)
        acknowledged += try await client.push((0..<50).map { _ in JobSpec(kind: "noop") }).ids

        let c = try node("c")
        try await c.waitFor("standby")
        // Serving meanwhile: a holds every write, so b acknowledges while c copies.
        acknowledged += try await client.push((0..<50).map { _ in JobSpec(kind: "noop") }).ids
        do {
            try await waitUntil("c to be recorded in sync", timeout: .seconds(60)) {
                (try? await sync.read())??.standbys == ["a", "c"]
            }
        } catch {
            print("C:\n\(c.log)\nB:\n\(b.log)")
            throw error
        }
        #expect(c.log.contains("replaced by the primary's snapshot"))
        acknowledged += try await client.push((0..<50).map { _ in JobSpec(kind: "noop") }).ids
        await client.close()
        #expect(try await b.stop() == 0)
        for standby in [a, c] { #expect(try await standby.stop() == 0) }
        // Stopped in this order, every node holds the same jobs: those acknowledged, and the jobs b put back.
        let onB = try Self.allJobs(in: b)
        #expect(Set(acknowledged).isSubset(of: onB))
        #expect(try Self.allJobs(in: a) == onB)
        #expect(try Self.allJobs(in: c) == onB)
    }

    @Test(
        "SIGSTOP the primary past its lease: the standby takes over; woken, the old primary acknowledges nothing more, steps down and rejoins as a standby with nothing unacknowledged"
    )
    func pauseThePrimary() async throws {
        let bed = try await ClusterTestBed()
        let sync = bed.sync
        let a = try bed.node("a")
        try await a.waitFor("ready")
        let b = try bed.node("b")
        try await Self.pair(a, b, sync: sync)
        // A client that pushes to a without pause, recording what a acknowledged.
        let (acknowledged, pusher) = Self.pushWithoutPause(to: a.listen)
        try await waitUntil("a to acknowledge pushes") { acknowledged.value.count >= 20 }
        kill(a.pid, SIGSTOP)
        try await b.waitFor("primary", timeout: .seconds(20))
        try await b.waitFor("ready")
        kill(a.pid, SIGCONT)
        try await a.waitFor("deposed")
        // Back as b's standby, after replacing its store if it had committed what it could not acknowledge.
        try await a.waitFor("standby of=b")
        pusher.cancel()
        _ = try? await pusher.value
        do {
            try await waitUntil("a to be recorded in sync", timeout: .seconds(60)) {
                (try? await sync.read())??.standbys == ["a"]
            }
        } catch {
            print("A:\n\(a.log)\nB:\n\(b.log)")
            throw error
        }
        let onB = try Self.allJobs(in: b)
        #expect(Set(acknowledged.value).isSubset(of: onB))
        #expect(try await b.stop() == 0)
        #expect(try await a.stop() == 0)
        #expect(try Self.allJobs(in: a) == Self.allJobs(in: b))
    }
}

extension ClusterFailoverTests {
    @Test(
        "cut the primary off from etcd and its standby: it stops acknowledging within its lease, the standby takes over, and back, the old primary rejoins with what it never acknowledged gone"
    )
    func partitionThePrimary() async throws {
        let bed = try await ClusterTestBed()
        let sync = bed.sync
        // a reaches etcd (one member of it), and b reaches a's replication endpoint, through taps that can drop
        // everything.
        let etcdPort = try #require(bed.etcd.endpoints.first?.split(separator: ":").last.map(String.init))
        let toEtcd = try TCPTap(port: etcdPort, bothWays: true)
        let ports = try LoopbackPorts.free(3)
        let toReplication = try TCPTap(port: String(ports[2]), bothWays: true)
        let a = try bed.node(
            "a", etcd: ["http://127.0.0.1:\(toEtcd.port)"], ports: ports,
            arguments: ["--replication-advertise", toReplication.endpoint])
        try await a.waitFor("ready")
        let b = try bed.node("b")
        try await Self.pair(a, b, sync: sync)
        let (acknowledged, pusher) = Self.pushWithoutPause(to: a.listen)
        try await waitUntil("a to acknowledge pushes") { acknowledged.value.count >= 20 }
        try await toEtcd.dropAnswers()
        try await toReplication.dropAnswers()
        let cut = ContinuousClock.now
        // A push a commits while it still leads, which b cannot get: held, and never acknowledged.
        let heldClient = try JobClient(endpoint: a.listen)
        let held = Task { try? await heldClient.push([JobSpec(kind: "noop")]).ids }
        try await waitUntil("a to commit a push b cannot get") {
            try !Self.allJobs(in: a).isSubset(of: Self.allJobs(in: b))
        }
        try await a.waitFor("deposed", timeout: .seconds(20))
        let steppedDown = ContinuousClock.now - cut
        // Its lease is 3 s from its last renewal, sent before the cut.
        #expect(steppedDown < .seconds(3), "a stepped down \(steppedDown) after the cut")
        let acknowledgedByA = acknowledged.value
        try await b.waitFor("primary", timeout: .seconds(20))
        try await b.waitFor("ready")
        pusher.cancel()
        _ = try? await pusher.value
        #expect(acknowledged.value == acknowledgedByA, "a acknowledged pushes after it stepped down")
        let onB = try Self.allJobs(in: b)
        #expect(Set(acknowledgedByA).isSubset(of: onB))
        // Still unanswered (a released nothing after the cut): closing the client ends the wait.
        await heldClient.close()
        #expect(await held.value == nil, "a acknowledged a push b does not hold")

        try await toEtcd.forwardAnswers()
        try await toReplication.forwardAnswers()
        try await a.waitFor("standby of=b", timeout: .seconds(30))
        try await waitUntil("a to be recorded in sync", timeout: .seconds(60)) {
            (try? await sync.read())??.standbys == ["a"]
        }
        #expect(a.log.contains("replaced by the primary's snapshot"))
        #expect(try await b.stop() == 0)
        #expect(try await a.stop() == 0)
        #expect(try Self.allJobs(in: a) == Self.allJobs(in: b))
    }
}

extension ClusterFailoverTests {
    @Test(
        "three nodes: SIGKILL the primary halfway through a 50,000-row import; a standby leads within 10 s, the workers and the subscriber follow it, every row lands once, the feed's seqs run without a gap and no job runs on two workers at once"
    )
    func killThePrimaryDuringAnImport() async throws {
        let bed = try await ClusterTestBed()
        let (a, b, c) = try await bed.primaryWithTwoStandbys()
        let nodes = [a, b, c]
        // Every client names every node: standbys answer NOT_PRIMARY naming the primary, so that is where requests go.
        let listen = nodes.map(\.listen).joined(separator: ",")
        let feedEndpoints = nodes.map(\.feed).joined(separator: ",")
        // Each worker records the attempts it runs: the ledger that shows no job ran on two workers at once.
        let ledgers = try TemporaryDirectory()
        let logs = (0..<3).map { ledgers.path("worker-\($0).ndjson") }
        var workers = try logs.prefix(2).map {
            try ChaosTests.WorkerProcess(endpoint: listen, arguments: ["--job-log", $0])
        }
        defer { workers.forEach { $0.stop() } }
        var options = ChangeFeed.Options()
        options.since = 0
        let feed = try ChangeFeed(feed: feedEndpoints, jobs: listen, options: options)
        let seqs = Locked<[UInt64]>([])
        let ended = Locked<String?>(nil)
        let follower = Task {
            do {
                for try await event in feed {
                    guard case .didSave(let save) = event else { continue }
                    seqs.withLock { $0.append(save.seq) }
                }
                ended.withLock { $0 = "the feed ended" }
            } catch {
                ended.withLock { $0 = "the feed failed: \(error)" }
            }
        }
        let input = DemoData.pullRequests(count: 50_000, users: 400)
        let expected = try ImportIntegrationTests.Expected(input)
        let client = try JobClient(endpoint: listen)
        let pushed = try await client.pushImport(input, rowsPerJob: 500)
        try await waitUntil("half the import to be done", timeout: .seconds(120)) {
            try b.read { db in
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM tributary_jobs WHERE batch = ? AND state = 'done'",
                    arguments: [pushed.batch]) ?? 0
            } >= 50
        }
        a.kill()
        let killed = ContinuousClock.now
        // A worker that joins during the failover, with slots free: the jobs the others still run must not be given
        // to it.
        workers.append(try ChaosTests.WorkerProcess(endpoint: listen, arguments: ["--job-log", logs[2]]))
        // Whichever standby the election picks.
        let primary = try await withTimeout("a standby to lead", .seconds(20)) {
            try await withThrowingTaskGroup(of: ClusterNodeProcess.self) { group in
                for standby in [b, c] {
                    group.addTask {
                        try await standby.waitFor("ready", timeout: .seconds(20))
                        return standby
                    }
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        }
        let takeover = ContinuousClock.now - killed
        #expect(takeover < .seconds(10), "node \(primary.name) served as primary \(takeover) after a was killed")
        var status: BatchStatus?
        try await waitUntil("the import to finish", timeout: .seconds(300), interval: .milliseconds(500)) {
            // The first requests may go out before the clients have found the new primary: they time out.
            if let now = try? await client.batchStatus(pushed.batch) { status = now }
            return status.map { $0.doneJobs + $0.deadJobs == $0.totalJobs } ?? false
        }
        #expect(status?.doneJobs == 100 && status?.deadJobs == 0 && status?.doneRows == 50_000)
        let last = try primary.read { db in try UInt64.fetchOne(db, sql: "SELECT max(seq) FROM tributary_history") ?? 0
        }
        do {
            try await waitUntil("the subscriber to reach seq \(last)", timeout: .seconds(60)) {
                seqs.value.last.map { $0 >= last } ?? false
            }
        } catch {
            Issue.record(
                "the subscriber stopped at seq \(seqs.value.last ?? 0): \(ended.value ?? "its feed still runs")")
            throw error
        }
        follower.cancel()
        await feed.close()
        await client.close()
        #expect(seqs.value == Array(1...last), "the subscriber's seqs run from 1 without a gap or a repeat")
        try primary.read { db in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM PullRequest") == 50_000)
            #expect(try AppliedOnce.rewrittenObjects(of: "PullRequest", in: db) == 0)
            let mismatches = try expected.mismatches(in: db)
            #expect(mismatches.users == 0 && mismatches.authors == 0 && mismatches.reviewers == 0)
        }
        // Stopped gracefully, the workers have written their ledgers whole.
        for worker in workers { #expect(await worker.terminate() == 0) }
        let ledger = try JobLedger(paths: logs)
        #expect(ledger.unfinished.isEmpty, "every attempt a worker started, it ended: \(ledger.unfinished)")
        #expect(ledger.completedJobs.count == 100, "every job completed on a worker")
        #expect(
            ledger.overlaps.isEmpty,
            "no job ran on two workers at once: \(ledger.overlaps.prefix(5).map { "job \($0.0.job) attempt \($0.0.attempt) on \($0.0.worker) and attempt \($0.1.attempt) on \($0.1.worker)" })"
        )
        for node in [b, c] where node !== primary { #expect(try await node.stop() == 0) }
        #expect(try await primary.stop() == 0)
    }
}

extension ClusterFailoverTests {
    @Test(
        "asynchronous: writes go on with no standby, the sync state says none is eligible, and the standby is not promoted when the primary dies"
    )
    func asynchronousNeverPromotes() async throws {
        let bed = try await ClusterTestBed()
        let (client, sync) = (bed.etcdClient, bed.sync)
        let node = { (name: String) in try bed.node(name, arguments: ["--asynchronous-replication"]) }
        let a = try node("a")
        try await a.waitFor("ready")
        #expect(try await sync.read()?.asynchronous == true)
        // No standby: acknowledged anyway.
        let jobs = try JobClient(endpoint: a.listen)
        let first = try await jobs.push([JobSpec(kind: "noop")]).ids
        #expect(first.count == 1)
        let b = try node("b")
        try await b.waitFor("standby of=a")
        _ = try await jobs.push([JobSpec(kind: "noop")])
        await jobs.close()
        a.kill()
        // a's key goes with its lease; b, not eligible, does not take it over.
        let key = LeaderElection.leaderKey(cluster: ClusterTestBed.cluster)
        try await waitUntil("a's leader key to lapse", timeout: .seconds(20)) { try await client.get(key) == nil }
        let watched = ContinuousClock.now
        // Eight of b's looks for a leader (every 250 ms): none creates the key.
        while ContinuousClock.now - watched < .seconds(2) {
            #expect(try await client.get(key) == nil, "b took over though no standby was eligible")
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(!b.log.contains("leads cluster"))
        // a, the one the record names, leads again when it comes back; b follows it.
        try a.restart()
        try await a.waitFor("ready")
        try await b.waitFor("standby of=a")
        #expect(try await b.stop() == 0)
        #expect(try await a.stop() == 0)
    }
}

extension ClusterFailoverTests {
    @Test("a store that served alone becomes a cluster's primary: a new standby takes its rows from a snapshot")
    func storeOfACoordinatorAlone() async throws {
        let directory = try TemporaryDirectory()
        // The store as a coordinator running alone left it: jobs, and no record of a cluster.
        let alone = try await TestCoordinator.start(in: directory, workers: 0, storePath: directory.path("a.sqlite"))
        let jobs = try JobClient(endpoint: alone.process.listenEndpoint)
        let before = try await jobs.push((0..<5).map { _ in JobSpec(kind: "noop") }).ids
        await jobs.close()
        #expect(await alone.process.stop() == 0)

        let bed = try await ClusterTestBed(in: directory, modelPath: alone.modelPath)
        let sync = bed.sync
        let node = { (name: String) in try bed.node(name) }
        let a = try node("a")
        try await a.waitFor("ready")
        let b = try node("b")
        try await Self.pair(a, b, sync: sync)
        // In sync: so it holds what a held before it recorded anything.
        #expect(try Self.jobs(before, in: b) == Set(before))
        #expect(b.log.contains("replaced by the primary's snapshot"))
        #expect(try await b.stop() == 0)
        #expect(try await a.stop() == 0)
    }
}

extension ClusterFailoverTests {
    @Test("tributary demo --failover: the primary killed halfway, a standby takes over, every row and seq checked")
    func failoverDemo() async throws {
        let run = try await Binaries.run("tributary", ["demo", "--failover", "--rows", "10000", "--users", "200"])
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output.contains("took over"), "\(run.output)")
        #expect(run.output.contains("10000 pull requests in the new primary's store"), "\(run.output)")
        #expect(run.output.contains("without a gap, and was never told FEED_REWRITTEN"), "\(run.output)")
    }
}

extension ClusterFailoverTests {
    @Test(
        "of two standbys in sync, one SIGKILLed is dropped from the sync state within seconds and writes go on with the other; back, it is in sync and named again"
    )
    func loseOneOfTwoStandbys() async throws {
        let bed = try await ClusterTestBed()
        let sync = bed.sync
        let (a, b, c) = try await bed.primaryWithTwoStandbys()
        let client = try JobClient(endpoint: a.listen)
        _ = try await client.push([JobSpec(kind: "noop")])
        c.kill()
        let killed = ContinuousClock.now
        // Held while c still counts, then acknowledged with b's copy once the record no longer names c.
        let pushed = try await client.push([JobSpec(kind: "noop")]).ids
        let waited = ContinuousClock.now - killed
        #expect(waited < .seconds(10), "the push waited \(waited) after c was killed")
        #expect(try await sync.read()?.standbys == ["b"], "c was still named when the push was acknowledged")
        #expect(try Self.jobs(pushed, in: b) == Set(pushed))
        let status = try #require(try await client.status().cluster)
        #expect(!status.writesBlocked)
        #expect(status.standbys.first { $0.name == "c" }.map { !$0.inSync && !$0.connected } == true)
        // Back: it catches up, is in sync again, and named again.
        try c.restart()
        try await c.waitFor("standby of=a")
        try await waitUntil("c to be recorded in sync again") { (try? await sync.read())??.standbys == ["b", "c"] }
        #expect(try Self.jobs(pushed, in: c) == Set(pushed))
        await client.close()
        for standby in [b, c] { #expect(try await standby.stop() == 0) }
        #expect(try await a.stop() == 0)
    }
}
