import Foundation
import Testing
import TributaryCommandSupport
import TributaryCore
import ZeroMQ

@testable import TributaryDemo
@testable import TributaryMessaging

/// The `tributary`, `tributary-coordinator` and `tributary-worker` executables as a user runs them.
@Suite("Command line", .serialized)
struct CLITests {
    @Test(
        "bad flags and missing files exit non-zero with a message naming the problem",
        arguments: [
            (
                ["push", "import", "--entity", "PullRequest", "--file", "/nonexistent.ndjson"],
                "cannot read --file /nonexistent.ndjson"
            ),
            (
                ["push", "import", "--entity", "PullRequest", "--file", "/etc/hostname", "--chunk", "0"],
                "--chunk must be a positive"
            ),
            (
                ["push", "import", "--entity", "PullRequest", "--file", "/etc/hostname", "--batch-size", "0"],
                "--batch-size must be a positive"
            ),
            (["push", "import", "--file", "/etc/hostname"], "Missing expected argument '--entity <entity>'"),
            (["subscribe", "--format", "xml"], "The value 'xml' is invalid for '--format <format>'"),
            (["status", "--bogus"], "Unknown option '--bogus'"),
            (["jobs", "list", "--state", "nope"], "--state must be one of cancelled, dead, done, queued, running"),
            (["push", "job", "--kind", "x", "--after", "-3"], "--after '-3' is not a job id"),
            (["push", "jobs", "--file", "/nonexistent.ndjson"], "cannot read --file /nonexistent.ndjson"),
            (["push", "jobs", "--file", "-", "--jobs-per-message", "0"], "--jobs-per-message must be a positive"),
            (["push", "job", "--kind", "x", "--batch", "schedule/nightly"], "names starting with 'schedule/'"),
            (
                ["generate", "kotlin", "--model", "m.json", "--output", "out"],
                "unknown language 'kotlin': tributary generate writes swift"
            ),
        ])
    func badFlags(arguments: [String], message: String) async throws {
        let result = try await Binaries.run("tributary", arguments)
        #expect(result.status != 0)
        #expect(result.error.contains(message), "\(result.error)")
    }

    @Test("generate swift writes, for a model of every type and both relationship kinds, the files tests compile")
    func generateSwift() async throws {
        let modelPath = "Tests/Fixtures/every-type-model.json"
        let modelURL = Repository.root.appendingPathComponent(modelPath)
        let model = try Model.load(contentsOf: modelURL)
        let types = Set(model.entities.flatMap { $0.attributes.map(\.type) })
        #expect(
            types == Set(AttributeType.allCases), "the fixture lacks \(Set(AttributeType.allCases).subtracting(types))")
        let relationships = model.entities.flatMap(\.relationships)
        #expect(relationships.contains { $0.isToMany } && relationships.contains { !$0.isToMany })

        let directory = try TemporaryDirectory()
        let output = directory.path("Generated")
        let result = try await Binaries.run(
            "tributary", ["generate", "swift", "--model", modelURL.path, "--output", output])
        try #require(result.status == 0, "\(result.error)")
        let committed = Repository.root.appendingPathComponent("Tests/GeneratedEntities/EveryType")
        let names = try FileManager.default.contentsOfDirectory(atPath: committed.path).sorted()
        #expect(try FileManager.default.contentsOfDirectory(atPath: output).sorted() == names)
        for name in names {
            // The header names the model as given; the committed files were made from the repository's root.
            let written = try String(contentsOfFile: output + "/" + name, encoding: .utf8)
                .replacingOccurrences(of: modelURL.path, with: modelPath)
            let compiled = try String(contentsOf: committed.appendingPathComponent(name), encoding: .utf8)
            #expect(written == compiled, "\(name) differs from the file the GeneratedEntities target compiles")
        }
        #expect(result.output.split(separator: "\n").count == names.count, "one line per file written")
    }

    @Test("the coordinator refuses an invalid model or a bad log level, naming the problem")
    func coordinatorRefusesBadInput() async throws {
        let directory = try TemporaryDirectory()
        let model = try directory.write(
            "model.json",
            "{\"entities\": [{\"name\": \"A\", \"attributes\": [{\"name\": \"x\", \"type\": \"strng\"}]}]}")
        let invalid = try await Binaries.run(
            "tributary-coordinator",
            [
                "--store", directory.path("s.sqlite"), "--model", model, "--listen", "tcp://127.0.0.1:*", "--feed",
                "tcp://127.0.0.1:*",
            ])
        #expect(invalid.status != 0)
        #expect(invalid.error.contains("unknown type 'strng'"), "\(invalid.error)")
        let missing = try await Binaries.run(
            "tributary-coordinator", ["--store", directory.path("s.sqlite"), "--model", directory.path("none.json")])
        #expect(missing.status != 0)
        #expect(missing.error.contains("cannot read model file"), "\(missing.error)")
        let priority = try await Binaries.run("tributary-worker", ["--priority", "high"])
        #expect(priority.status != 0)
        #expect(priority.error.contains("The value 'high' is invalid for '--priority <priority>'"), "\(priority.error)")
        let workerPriority = try await Binaries.run("tributary-coordinator", ["--worker-priority", "nice"])
        #expect(workerPriority.status != 0)
        #expect(workerPriority.error.contains("'--worker-priority <worker-priority>'"), "\(workerPriority.error)")
        let level = try await Binaries.run("tributary-worker", ["--log-level", "loud"])
        #expect(level.status != 0)
        #expect(level.error.contains("unknown log level 'loud'"))
        let jobLog = try await Binaries.run("tributary-worker", ["--job-log", directory.path("none/jobs.ndjson")])
        #expect(jobLog.status != 0)
        #expect(
            jobLog.error.contains("--job-log: the directory \(directory.path("none")) does not exist"),
            "\(jobLog.error)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("none")), "a refused start creates nothing")
    }

    @Test("keys generate writes a public key file with its role and a 0600 secret file, and never prints the secret")
    func keysGenerate() async throws {
        let directory = try TemporaryDirectory()
        let out = directory.path("keys")
        let made = try await Binaries.run(
            "tributary", ["keys", "generate", "--out", out, "--name", "w1", "--role", "client"])
        #expect(made.status == 0, "\(made.error)")
        let publicFields = try CurveKeyFile.fields(of: out + "/w1.pub")
        let secretFields = try CurveKeyFile.fields(of: out + "/w1.secret")
        let publicKey = try #require(publicFields["public-key"])
        let secretKey = try #require(secretFields["secret-key"])
        #expect(publicFields["role"] == "client")
        #expect(publicFields["secret-key"] == nil)
        #expect(try CurveKeyPair.publicKey(ofSecret: secretKey) == publicKey)
        #expect(made.output.contains(publicKey))
        #expect(!made.output.contains(secretKey) && !made.error.contains(secretKey))
        let mode = try FileManager.default.attributesOfItem(atPath: out + "/w1.secret")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try await Binaries.run("tributary", ["keys", "generate", "--out", out, "--name", "w1"])
        #expect(again.status != 0 && again.error.contains("w1.pub exists"), "\(again.error)")
        #expect(try CurveKeyFile.fields(of: out + "/w1.secret")["secret-key"] == secretKey, "not overwritten")
        let role = try await Binaries.run("tributary", ["keys", "generate", "--out", out, "--role", "admin"])
        #expect(role.status != 0 && role.error.contains("--role must be worker, client or subscriber"))
    }

    @Test("the coordinator binds only loopback unless told --insecure, explaining why")
    func safeByDefault() async throws {
        let directory = try TemporaryDirectory()
        let model = try directory.write("model.json", DemoData.modelJSON)
        for (flag, endpoint) in [("--listen", "tcp://0.0.0.0:*"), ("--feed", "tcp://*:*")] {
            var arguments = ["--store", directory.path("s.sqlite"), "--model", model]
            arguments += flag == "--listen" ? [flag, endpoint, "--feed", "tcp://127.0.0.1:*"] : [flag, endpoint]
            let refused = try await Binaries.run("tributary-coordinator", arguments)
            #expect(refused.status != 0)
            #expect(refused.error.contains("\(flag) \(endpoint) is not a loopback address"), "\(refused.error)")
            #expect(refused.error.contains("--insecure"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("s.sqlite")), "nothing was opened")
    }

    @Test("the coordinator refuses cluster flags that cannot work, naming the flag, and opens no store")
    func clusterFlagsRefused() async throws {
        let directory = try TemporaryDirectory()
        let model = try directory.write("model.json", DemoData.modelJSON)
        let store = ["--store", directory.path("s.sqlite"), "--model", model]
        let cluster = [
            "--cluster", "c", "--etcd", "http://127.0.0.1:1", "--replication-listen", "tcp://127.0.0.1:7490",
            "--listen", "tcp://127.0.0.1:7491", "--feed", "tcp://127.0.0.1:7492",
        ]
        func without(_ flag: String) -> [String] {
            guard let index = cluster.firstIndex(of: flag) else { return cluster }
            return Array(cluster[..<index] + cluster[(index + 2)...])
        }
        let cases: [(arguments: [String], says: String)] = [
            (without("--etcd"), "--cluster needs --etcd"),
            (without("--replication-listen"), "--cluster needs --replication-listen"),
            (cluster + ["--durability", "normal"], "--cluster needs --durability full"),
            (without("--listen") + ["--listen", "tcp://127.0.0.1:*"], "--listen must be tcp://HOST:PORT with a port"),
            (
                without("--replication-listen") + ["--replication-listen", "tcp://0.0.0.0:7490", "--insecure"],
                "--replication-listen binds 0.0.0.0: say with --advertise-host"
            ),
            (cluster + ["--name", "a b"], "--name must be a name of letters"),
            (["--name", "a"], "--name has no use without --cluster"),
            (["--asynchronous-replication"], "--asynchronous-replication has no use without --cluster"),
        ]
        for (arguments, says) in cases {
            let refused = try await Binaries.run("tributary-coordinator", store + arguments)
            #expect(refused.status != 0, "\(arguments) was not refused")
            #expect(refused.error.contains(says), "\(arguments): \(refused.error)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("s.sqlite")), "nothing was opened")
    }

    @Test(
        "push --wait imports, subscribe prints JSON events, status reports; a failing job and an unknown entity exit non-zero"
    )
    func pushSubscribeStatus() async throws {
        let directory = try TemporaryDirectory()
        let input = try directory.write("prs.ndjson", DemoData.pullRequests(count: 300, users: 20))
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 2) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let feed = ["--feed", coordinator.process.feedEndpoint]
            // A subscriber started first, waiting for its "subscribed" line before anything is pushed.
            let subscriber = Process()
            subscriber.executableURL = Binaries.url("tributary")
            subscriber.arguments =
                ["subscribe", "--format", "json", "--entity", "PullRequest", "--count", "3"] + feed + jobs
            let output = Pipe()
            let errors = Pipe()
            subscriber.standardOutput = output
            subscriber.standardError = errors
            try subscriber.run()
            let errorLines = LineReader(errors.fileHandleForReading)
            _ = try await withTimeout("the subscriber to connect", .seconds(30)) {
                for await line in errorLines.lines where line.hasPrefix("subscribed") { return line }
                throw TimedOut(what: "a subscribed line")
            }

            let pushed = try await Binaries.run(
                "tributary",
                ["push", "import", "--entity", "PullRequest", "--file", input, "--chunk", "100", "--wait"] + jobs + feed
            )
            #expect(pushed.status == 0, "\(pushed.error)")
            #expect(pushed.output.contains("done: 3 jobs, 300 rows"))

            let lines = try await withTimeout("three events", .seconds(30)) {
                await LineReader(output.fileHandleForReading).lines.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(lines.count == 3)
            var previous = 0
            for line in lines {
                let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let seq = try #require(event["seq"] as? Int)
                #expect(seq > previous)
                previous = seq
                let inserted = try #require(event["inserted"] as? [[String: String]])
                #expect(
                    inserted.count == 100
                        && inserted.allSatisfy { $0["entity"] == "PullRequest" && $0["id"]?.count == 36 })
                #expect(event["updated"] is [Any] && event["deleted"] is [Any])
            }

            // Resumed from history by a durable subscriber, whose position the coordinator then lists.
            let resumed = try await Binaries.run(
                "tributary", ["subscribe", "--since", "0", "--count", "3", "--durable", "cli"] + feed + jobs)
            #expect(resumed.status == 0, "\(resumed.error)")
            #expect(resumed.output.split(separator: "\n").map { $0.prefix(6) } == ["seq 1 ", "seq 2 ", "seq 3 "])
            let subscribers = try await Binaries.run("tributary", ["subscribers"] + jobs)
            #expect(subscribers.output.hasPrefix("cli  seq 3  updated "), "\(subscribers.output)")
            let ahead = try await Binaries.run("tributary", ["subscribe", "--since", "99"] + feed + jobs)
            #expect(ahead.status == 4 && ahead.error.contains("rewritten from seq 4"), "\(ahead.error)")

            let bad = try directory.write(
                "bad.ndjson",
                "{\"number\": 1, \"title\": \"ok\", \"merged\": true, \"additions\": \"many\", \"createdAt\": \"2024-01-01T00:00:00Z\"}\n"
            )
            let failing = try await Binaries.run(
                "tributary", ["push", "import", "--entity", "PullRequest", "--file", bad, "--wait"] + jobs + feed)
            #expect(failing.status == 1)
            #expect(
                failing.error.contains(
                    "failed (dead after 1 attempt): line 1: 'PullRequest.additions' is int: expected an integer, got a string"
                ),
                "\(failing.error)")

            // The dead job is listed, shown with its error history, retried, and dies again (the row is still bad).
            let dead = try await Binaries.run("tributary", ["jobs", "list", "--state", "dead", "--json"] + jobs)
            let listed = try #require(
                try JSONSerialization.jsonObject(with: Data(dead.output.utf8)) as? [String: Any])
            let deadJobs = try #require(listed["jobs"] as? [[String: Any]])
            #expect(deadJobs.count == 1)
            let deadID = try #require(deadJobs.first?["jobId"] as? Int)
            let shown = try await Binaries.run("tributary", ["jobs", "show", String(deadID)] + jobs)
            #expect(shown.output.contains("state     dead"), "\(shown.output)")
            #expect(shown.output.contains("error     attempt 1 at"))
            let retried = try await Binaries.run("tributary", ["jobs", "retry", String(deadID)] + jobs)
            #expect(retried.status == 0, "\(retried.error)")
            #expect(retried.output.hasPrefix("\(deadID)  queued"), "\(retried.output)")
            try await waitUntil("the retried job to die again") {
                let again = try await Binaries.run("tributary", ["jobs", "show", String(deadID)] + jobs)
                return again.output.contains("state     dead") && again.output.contains("error     attempt 1")
                    && again.output.components(separatedBy: "error     attempt").count == 3
            }
            let deleted = try await Binaries.run("tributary", ["jobs", "delete", String(deadID)] + jobs)
            #expect(deleted.status == 0 && deleted.output.hasPrefix("deleted: \(deadID)  dead"), "\(deleted.output)")
            let gone = try await Binaries.run("tributary", ["jobs", "show", String(deadID)] + jobs)
            #expect(gone.status != 0 && gone.error.contains("job \(deadID) does not exist"), "\(gone.error)")
            let notDead = try await Binaries.run("tributary", ["jobs", "retry", "1"] + jobs)
            #expect(notDead.status != 0)
            #expect(notDead.error.contains("job 1 is done; only dead jobs can be retried"), "\(notDead.error)")

            let unknown = try await Binaries.run(
                "tributary", ["push", "import", "--entity", "Nope", "--file", input] + jobs)
            #expect(unknown.status != 0)
            #expect(unknown.error.contains("UNKNOWN_ENTITY: unknown entity 'Nope'"), "\(unknown.error)")

            let status = try await Binaries.run("tributary", ["status", "--json"] + jobs)
            #expect(status.status == 0)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any])
            let jobCounts = try #require(json["jobs"] as? [String: Any])
            #expect(jobCounts["done"] as? Int == 3 && jobCounts["dead"] as? Int == 0, "the dead job was deleted")
            // Zero and empty fields are printed, not left out.
            #expect(jobCounts["cancelled"] as? Int == 0 && (json["running"] as? [Any])?.isEmpty == true)
            #expect((json["workers"] as? [Any])?.count == 2)
        }
        #expect(exitStatus == 0)
    }

    @Test("push job --unique-key enqueues nothing while the key's job is queued; --json prints empty fields too")
    func uniqueKeyAndFullJSON() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let push = ["push", "job", "--kind", "noop", "--unique-key", "nightly"] + jobs
            let first = try await Binaries.run("tributary", push)
            #expect(first.status == 0, "\(first.error)")
            let again = try await Binaries.run("tributary", push)
            #expect(again.status == 0 && again.output == first.output, "the queued job's id: \(again.output)")
            #expect(again.error.contains("not enqueued: job \(first.output) has the unique key 'nightly'"))

            let listed = try await Binaries.run("tributary", ["jobs", "list", "--json"] + jobs)
            let reply = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any])
            let only = try #require((reply["jobs"] as? [[String: Any]])?.first)
            #expect((reply["jobs"] as? [Any])?.count == 1)
            #expect(only["state"] as? String == "queued" && only["attempt"] as? Int == 0 && only["done"] as? Int == 0)
            #expect(only["workerId"] as? String == "" && only["runAt"] as? Double == 0)
            #expect(
                (only["errors"] as? [Any])?.isEmpty == true && (only["arguments"] as? [String: Any])?.isEmpty == true)

            let imported = try directory.write("prs.ndjson", DemoData.pullRequests(count: 30, users: 5))
            let pushImport = ["push", "import", "--entity", "PullRequest", "--file", imported, "--chunk", "10"]
            let firstImport = try await Binaries.run("tributary", pushImport + ["--unique-key", "prs"] + jobs)
            #expect(firstImport.status == 0, "\(firstImport.error)")
            let secondImport = try await Binaries.run("tributary", pushImport + ["--unique-key", "prs"] + jobs)
            #expect(secondImport.error.contains("not enqueued: 3 of them"), "\(secondImport.error)")
            let status = try await Binaries.run("tributary", ["status", "--json"] + jobs)
            let counts = try #require(
                (try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any])?["jobs"]
                    as? [String: Any])
            #expect(counts["queued"] as? Int == 4 && counts["running"] as? Int == 0 && counts["dead"] as? Int == 0)
        }
        #expect(exitStatus == 0)
    }

    @Test("a client with no coordinator gives up with a message naming the endpoint")
    func noCoordinator() async throws {
        let result = try await Binaries.run(
            "tributary", ["status", "--listen", "tcp://127.0.0.1:1"], environment: [:])
        #expect(result.status != 0)
        #expect(result.error.contains("no answer from the coordinator at tcp://127.0.0.1:1"), "\(result.error)")
    }
}
