import Foundation
import GRDB
import Testing

/// `tributary push jobs`: a file of job specs pushed as one batch in messages of many jobs, checked whole before
/// anything is sent.
@Suite("push jobs", .serialized)
struct PushJobsTests {
    /// Line `index` of the file the tests push: kinds, queues, priorities and arguments that vary, a unique key on
    /// every tenth, and parents: the job before (by position) on every fifth, a job pushed before the file on every
    /// seventh, a batch on every eleventh.
    static func line(_ index: Int, seed: Int) -> [String: Any] {
        var line: [String: Any] = [
            "kind": index % 2 == 0 ? "mail" : "report", "priority": index % 7 - 3,
            "arguments": ["n": String(index), "to": "user\(index)@example.com"],
        ]
        if index % 3 != 0 { line["queue"] = index % 3 == 1 ? "mail" : "reports" }
        if index % 10 == 0 { line["uniqueKey"] = "job-\(index)" }
        if index % 5 == 4 { line["afterPushed"] = [index - 1] }
        if index % 7 == 6 {
            line["afterJobs"] = [seed]
            line["onParentFailure"] = "cancel"
        }
        if index % 11 == 10 { line["afterBatches"] = ["nightly"] }
        return line
    }

    static func ndjson(_ lines: [[String: Any]]) throws -> String {
        try lines.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
            .joined(separator: "\n") + "\n"
    }

    @Test("a file of 600 jobs, in messages of 64, puts each in the store once with its fields and parents")
    func pushesEveryJobOnce() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            // Job 1 is a parent of some lines; job 2 holds the unique key one line asks for.
            let seed = try await Binaries.run(
                "tributary", ["push", "job", "--kind", "seed", "--batch", "nightly"] + jobs)
            let holder = try await Binaries.run(
                "tributary", ["push", "job", "--kind", "seed", "--unique-key", "held"] + jobs)
            #expect(seed.output == "1" && holder.output == "2", "\(seed.error) \(holder.error)")
            var lines = (0..<600).map { Self.line($0, seed: 1) }
            lines[321]["uniqueKey"] = "held"
            let file = try directory.write("jobs.ndjson", try Self.ndjson(lines))

            let pushed = try await Binaries.run(
                "tributary",
                ["push", "jobs", "--file", file, "--jobs-per-message", "64", "--json", "--batch", "bulk"] + jobs)
            #expect(pushed.status == 0, "\(pushed.error)")
            #expect(pushed.error.contains("pushed 600 jobs as batch bulk"), "\(pushed.error)")
            #expect(pushed.error.contains("not enqueued: 1 of them"), "\(pushed.error)")
            let reply = try #require(
                try JSONSerialization.jsonObject(with: Data(pushed.output.utf8)) as? [String: Any])
            let ids = try #require(reply["jobIds"] as? [Int]).map(Int64.init)
            #expect(reply["batch"] as? String == "bulk" && reply["duplicates"] as? [Int] == [321])
            #expect(ids.count == 600 && ids[321] == 2, "the duplicate's id is the holder's")
            #expect(Set(ids).count == 600, "one id per job")

            let stored = try DatabaseQueue(path: coordinator.storePath).read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT j.id, j.kind, j.queue, j.priority, j.unique_key, j.arguments, j.state, j.on_parent_failure,
                            (SELECT group_concat(parent) FROM tributary_job_parents WHERE child = j.id) AS parents,
                            (SELECT group_concat(batch) FROM tributary_batch_parents WHERE child = j.id) AS batches
                        FROM tributary_jobs j WHERE j.batch = 'bulk' ORDER BY j.id
                        """)
            }
            #expect(stored.count == 599, "every job but the duplicate, once")
            let byID = Dictionary(uniqueKeysWithValues: stored.map { ($0["id"] as Int64, $0) })
            for (index, line) in lines.enumerated() where index != 321 {
                let row = try #require(byID[ids[index]], "line \(index + 1)'s job is stored")
                #expect(row["kind"] as String == line["kind"] as? String)
                #expect(row["queue"] as String == (line["queue"] as? String ?? "default"))
                #expect(row["priority"] as Int == line["priority"] as? Int)
                #expect(row["unique_key"] as String? == line["uniqueKey"] as? String)
                let arguments = try JSONSerialization.jsonObject(with: Data((row["arguments"] as String).utf8))
                #expect(arguments as? [String: String] == line["arguments"] as? [String: String])
                var parents = ((line["afterJobs"] as? [Int]) ?? []).map(Int64.init)
                parents += ((line["afterPushed"] as? [Int]) ?? []).map { ids[$0] }
                let storedParents = (row["parents"] as String?)?.split(separator: ",").compactMap { Int64($0) } ?? []
                #expect(storedParents.sorted() == parents.sorted(), "line \(index + 1)'s parents")
                #expect(row["batches"] as String? == (line["afterBatches"] as? [String])?.first)
                let hasParents = !parents.isEmpty || line["afterBatches"] != nil
                let policy = line["onParentFailure"] as? String ?? (hasParents ? "fail" : nil)
                #expect(row["on_parent_failure"] as String? == policy, "line \(index + 1)'s policy")
                #expect(row["state"] as String == (hasParents ? "waiting" : "queued"), "line \(index + 1)'s state")
            }
        }
        #expect(exitStatus == 0)
    }

    @Test("a bad line is refused naming its number and the problem, and nothing of the file is pushed")
    func badLineRefused() async throws {
        let directory = try TemporaryDirectory()
        let good = (0..<300).map { Self.line($0, seed: 1) }
        let cases: [(line: String, message: String)] = [
            (#"{"kind": "mail", "priority": "high"}"#, "line 250: 'priority' must be a whole number"),
            (
                #"{"kind": "mail", "unique_key": "k"}"#,
                "line 250: unknown field 'unique_key' (did you mean 'uniqueKey'?)"
            ),
            (#"{"kind": "mail", "afterPushed": [260]}"#, "line 250: 'afterPushed' names job 260 of the file"),
            (#"{"kind": "mail", "queue": "no spaces"}"#, "line 250: 'queue': "),
            (#"{"arguments": {"to": "ann"}}"#, "line 250: no 'kind'"),
            (#"{"kind": "mail", "onParentFailure": "run"}"#, "line 250: 'onParentFailure' needs parents"),
            (#"{"kind": "mail""#, "line 250: not valid JSON"),
            (#"["mail"]"#, "line 250: not a JSON object"),
        ]
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            for (bad, message) in cases {
                var lines = try Self.ndjson(Array(good.prefix(249))).split(separator: "\n").map(String.init)
                lines.append(bad)
                lines += try Self.ndjson(Array(good.suffix(50))).split(separator: "\n").map(String.init)
                let file = try directory.write("bad.ndjson", lines.joined(separator: "\n"))
                let refused = try await Binaries.run("tributary", ["push", "jobs", "--file", file] + jobs)
                #expect(refused.status != 0)
                #expect(refused.error.contains("\(file), \(message)"), "\(refused.error)")
                #expect(refused.output.isEmpty, "no id printed: \(refused.output)")
            }
            let status = try await Binaries.run("tributary", ["status", "--json"] + jobs)
            let counts = try #require(
                (try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any])?["jobs"]
                    as? [String: Int])
            #expect(counts.values.allSatisfy { $0 == 0 }, "nothing was pushed: \(counts)")

            let missing = try await Binaries.run(
                "tributary", ["push", "jobs", "--file", directory.path("none.ndjson")] + jobs)
            #expect(missing.status != 0)
            #expect(missing.error.contains("cannot read --file \(directory.path("none.ndjson"))"), "\(missing.error)")
            let empty = try await Binaries.run(
                "tributary", ["push", "jobs", "--file", try directory.write("empty.ndjson", "\n\n")] + jobs)
            #expect(empty.status != 0 && empty.error.contains("empty.ndjson has no jobs"), "\(empty.error)")
        }
        #expect(exitStatus == 0)
    }

    @Test("--file - reads standard input; --wait follows the batch until every job is done")
    func standardInputAndWait() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 1) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let feed = ["--feed", coordinator.process.feedEndpoint]
            let lines: [[String: Any]] = (0..<40).map { index in
                index == 0 ? ["kind": "noop"] : ["kind": "noop", "afterPushed": [index - 1]]
            }
            let started = try StartedProcess.start(
                executable: Binaries.url("tributary"),
                ["push", "jobs", "--file", "-", "--wait", "--jobs-per-message", "16"] + jobs + feed,
                stdin: Data(try Self.ndjson(lines).utf8))
            defer { started.kill() }
            let (status, output, errors) = try await started.finish(timeout: .seconds(120))
            #expect(status == 0, "\(errors)")
            #expect(output.count == 41 && output.last == "done: 40 jobs", "\(output)")
            let ids = output.dropLast().compactMap { Int64($0) }
            #expect(ids == Array(1...40), "\(output)")
            #expect(errors.first?.hasPrefix("pushed 40 jobs as batch ") == true, "\(errors)")
        }
        #expect(exitStatus == 0)
    }
}
