import Foundation
import Testing
import TributaryCore

@testable import TributaryDemo

/// One JSON form of a job for the CLI's `--json` and the HTTP API (``JobJSON``), carrying every field of the domain
/// types, and the CLI's batch names and push output.
@Suite("Job JSON and named batches", .serialized)
struct JobJSONTests {
    /// A job with every optional field set.
    static let fullJob: JobInfo = {
        var job = JobInfo(
            id: 12, batch: "nightly", kind: "report", state: .waiting, attempt: 1, maxAttempts: 5, done: 3, total: 9,
            worker: "w1", runAt: Date(timeIntervalSince1970: 100), createdAt: Date(timeIntervalSince1970: 50),
            updatedAt: Date(timeIntervalSince1970: 60), arguments: ["a": "b"],
            errors: [JobError(attempt: 1, at: 55, message: "boom")], queue: "imports")
        job.afterJobs = [7]
        job.afterBatches = ["daily"]
        job.onParentFailure = .cancel
        job.schedule = "hourly"
        job.tick = 3_600
        job.waiting = "waits for job 7 (running)"
        return job
    }()

    /// The JSON key of each stored property: its own name, but for the two the protocol names otherwise.
    static func expectedKeys(of value: Any, renamed: [String: String] = [:]) -> Set<String> {
        Set(Mirror(reflecting: value).children.compactMap(\.label).map { renamed[$0] ?? $0 })
    }

    static let jobRenames = ["id": "jobId", "worker": "workerId"]

    static func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("a job's JSON has a key for every stored property of JobInfo, with its value")
    func everyJobField() throws {
        let json = try Self.object(try JobJSON.text(Self.fullJob))
        #expect(Set(json.keys) == Self.expectedKeys(of: Self.fullJob, renamed: Self.jobRenames))
        #expect(json["afterJobs"] as? [Int] == [7] && json["afterBatches"] as? [String] == ["daily"])
        #expect(json["onParentFailure"] as? String == "cancel" && json["schedule"] as? String == "hourly")
        #expect(json["tick"] as? Double == 3_600 && json["waiting"] as? String == "waits for job 7 (running)")
        #expect(json["workerId"] as? String == "w1" && json["state"] as? String == "waiting")
    }

    @Test("a schedule's JSON has every field of ScheduleInfo and of its spec, the job spec's every field")
    func everyScheduleField() throws {
        let job = JobSpec(kind: "cleanup", arguments: ["x": "1"], priority: 2, queue: "ops")
        let info = ScheduleInfo(
            spec: ScheduleSpec(name: "tidy", cron: "*/5 * * * *", timeZone: "Europe/Paris", missed: .all, job: job),
            paused: true, nextTick: 900, lastTick: 600, lastJobID: 4, fired: 3, skipped: 1)
        let list = try Self.object(try JobJSON.text([info]))
        let json = try #require((list["schedules"] as? [[String: Any]])?.first)
        let specKeys = Self.expectedKeys(of: info.spec, renamed: ["timeZone": "timezone"])
        let infoKeys = Self.expectedKeys(of: info, renamed: ["lastJobID": "lastJobId"]).subtracting(["spec"])
        #expect(Set(json.keys) == specKeys.union(infoKeys))
        #expect(json["fired"] as? Int == 3 && json["skipped"] as? Int == 1 && json["paused"] as? Bool == true)
        #expect(json["nextTick"] as? Double == 900 && json["timezone"] as? String == "Europe/Paris")
        let spec = try #require(json["job"] as? [String: Any])
        // The spec keeps its parents in one private box: its keys are the public ones that read it.
        let specFields = Self.expectedKeys(
            of: job, renamed: ["backoffBase": "backoffBaseMs", "backoffCap": "backoffCapMs", "timeout": "timeoutMs"]
        ).subtracting(["parents"]).union(["afterJobs", "afterBatches", "afterPushed", "onParentFailure"])
        #expect(Set(spec.keys) == specFields)
        #expect(spec["kind"] as? String == "cleanup" && spec["queue"] as? String == "ops")
    }

    @Test("jobs show --json, jobs list --json and GET /api/jobs/ID carry every field, parents and batch included")
    func cliAndHTTPAgree() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let parent = try await Binaries.run("tributary", ["push", "job", "--kind", "noop"] + jobs)
            #expect(parent.status == 0, "\(parent.error)")
            let child = try await Binaries.run(
                "tributary",
                ["push", "job", "--kind", "noop", "--after", parent.output, "--batch", "nightly"] + jobs)
            #expect(child.status == 0, "\(child.error)")

            let shown = try Self.object(
                try await Binaries.run("tributary", ["jobs", "show", child.output, "--json"] + jobs).output)
            let url = try #require(coordinator.process.httpURL)
            let answer = try await HTTPRequests.send(url + "api/jobs/" + child.output)
            #expect(answer.status == 200, "\(answer.body)")
            let served = try Self.object(answer.body)
            let listed = try #require(
                try Self.object(try await Binaries.run("tributary", ["jobs", "list", "--json"] + jobs).output)["jobs"]
                    as? [[String: Any]])
            let keys = Self.expectedKeys(of: Self.fullJob, renamed: Self.jobRenames)
            for (name, json) in [("jobs show", shown), ("GET /api/jobs/ID", served), ("jobs list", listed[0])] {
                #expect(Set(json.keys) == keys, "\(name): \(json.keys.sorted())")
                #expect(json["afterJobs"] as? [Int] == [Int(parent.output) ?? -1], "\(name)")
                #expect(json["onParentFailure"] as? String == "fail", "\(name)")
                #expect(json["batch"] as? String == "nightly", "\(name)")
                #expect(json["state"] as? String == "waiting", "\(name)")
            }
            #expect((shown["waiting"] as? String)?.contains("waits for job \(parent.output)") == true)
            #expect(served["waiting"] as? String == shown["waiting"] as? String)
            let apiList = try Self.object(try await HTTPRequests.send(url + "api/jobs").body)
            #expect(Set(try #require((apiList["jobs"] as? [[String: Any]])?.first).keys) == keys)
        }
        #expect(exitStatus == 0)
    }

    @Test("push --batch NAME pushes into an open batch, refuses a finished one; push import prints its job ids")
    func namedBatchesAndImportIDs() async throws {
        let directory = try TemporaryDirectory()
        let rows = try directory.write("prs.ndjson", DemoData.pullRequests(count: 30, users: 5))
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let pushImport = ["push", "import", "--entity", "PullRequest", "--file", rows, "--chunk", "10"]
            let text = try await Binaries.run("tributary", pushImport + ["--batch", "nightly"] + jobs)
            #expect(text.status == 0, "\(text.error)")
            let lines = text.output.split(separator: "\n").map(String.init)
            #expect(lines.first == "nightly" && lines.count == 4, "\(text.output)")
            let ids = lines.dropFirst().compactMap { Int($0) }
            #expect(ids.count == 3 && ids == ids.sorted())

            let json = try Self.object(
                try await Binaries.run("tributary", pushImport + ["--batch", "nightly", "--json"] + jobs).output)
            #expect(json["batch"] as? String == "nightly")
            let moreIDs = try #require(json["jobIds"] as? [Int])
            #expect(moreIDs.count == 3 && (moreIDs.first ?? 0) > (ids.last ?? 0))
            #expect((json["duplicates"] as? [Int])?.isEmpty == true)
            let listed = try Self.object(
                try await Binaries.run("tributary", ["jobs", "list", "--batch", "nightly", "--json"] + jobs).output)
            #expect(
                Set(((listed["jobs"] as? [[String: Any]]) ?? []).compactMap { $0["jobId"] as? Int })
                    == Set(ids + moreIDs))

            // A batch whose every job was cancelled has finished: it takes no more.
            let single = try await Binaries.run(
                "tributary", ["push", "job", "--kind", "noop", "--batch", "once"] + jobs)
            #expect(single.status == 0, "\(single.error)")
            #expect(try await Binaries.run("tributary", ["jobs", "cancel", single.output] + jobs).status == 0)
            let refused = try await Binaries.run(
                "tributary", ["push", "job", "--kind", "noop", "--batch", "once"] + jobs)
            #expect(refused.status != 0)
            #expect(
                refused.error.contains(
                    "batch 'once' has finished (1 jobs: 0 done, 0 dead, 1 cancelled) and takes no new jobs"),
                "\(refused.error)")
        }
        #expect(exitStatus == 0)
    }

    @Test("schedules list --json prints every schedule with fired, skipped, next tick and paused")
    func schedulesJSON() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let added = try await Binaries.run(
                "tributary", ["schedules", "add", "tidy", "--cron", "@yearly", "--kind", "cleanup"] + jobs)
            #expect(added.status == 0, "\(added.error)")
            #expect(try await Binaries.run("tributary", ["schedules", "pause", "tidy"] + jobs).status == 0)
            let listed = try Self.object(
                try await Binaries.run("tributary", ["schedules", "list", "--json"] + jobs).output)
            let schedule = try #require((listed["schedules"] as? [[String: Any]])?.first)
            #expect(schedule["name"] as? String == "tidy" && schedule["paused"] as? Bool == true)
            #expect(schedule["fired"] as? Int == 0 && schedule["skipped"] as? Int == 0)
            #expect((schedule["nextTick"] as? Double ?? 0) > Date().timeIntervalSince1970)
            #expect((schedule["job"] as? [String: Any])?["kind"] as? String == "cleanup")
        }
        #expect(exitStatus == 0)
    }
}
