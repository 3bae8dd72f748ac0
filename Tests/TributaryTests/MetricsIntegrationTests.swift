import Foundation
import GRDB
import Testing
import TributaryCommandSupport

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryDemo

/// `/metrics` of a real coordinator during a real import, parsed with Prometheus' own Python parser
/// (`prometheus-client`, installed by `make test`) and checked against the store read with a separate connection.
@Suite("Metrics: /metrics during an import, against the store")
struct MetricsIntegrationTests {
    /// The parsed exposition: each family's type, and each sample's value by name and labels.
    struct Scrape {
        let families: [String: String]
        let samples: [(name: String, labels: [String: String], value: Double)]

        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }
    }

    static func scrape(_ url: String) async throws -> Scrape {
        let (status, body) = try await HTTPRequests.send(url + "metrics")
        try #require(status == 200, "GET /metrics answered \(status): \(body)")
        let parser = try StartedProcess.start(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3",
                Repository.root.appendingPathComponent("Tests/TributaryTests/Support/prometheus_samples.py").path,
            ],
            stdin: Data(body.utf8))
        let (exit, output, error) = try await parser.finish(timeout: .seconds(60))
        try #require(exit == 0, "prometheus_client could not parse /metrics: \(error.joined(separator: "\n"))")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(output.joined().utf8)) as? [String: Any])
        let families = try #require(json["families"] as? [String: String])
        let samples = try #require(json["samples"] as? [[String: Any]]).map {
            ($0["name"] as? String ?? "", $0["labels"] as? [String: String] ?? [:], $0["value"] as? Double ?? .nan)
        }
        return Scrape(families: families, samples: samples)
    }

    @Test(
        "counters follow the import; after it rows committed and jobs done equal the store's; names follow the conventions"
    )
    func countersMatchTheStore() async throws {
        let directory = try TemporaryDirectory()
        let users = (0..<8_000).map { #"{"login": "user\#($0)", "name": "User \#($0)"}"# }
        let first = Data((users[..<4_000].joined(separator: "\n") + "\n").utf8)
        let second = Data((users[4_000...].joined(separator: "\n") + "\n").utf8)
        let coordinator = try await TestCoordinator.start(in: directory, workers: 2)
        defer { Task { await coordinator.process.stop() } }
        let url = try #require(coordinator.process.httpURL)
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }

        // The first half, waited for: the counters say exactly that much.
        let firstPush = try await client.pushImport(first, entity: "User", rowsPerJob: 500)
        _ = try await client.finish(firstPush.batch)
        let half = try await Self.scrape(url)
        #expect(half.value("tributary_rows_committed_total") == 4_000)
        #expect(half.value("tributary_jobs_done_total", ["kind": "import"]) == 8)
        #expect(half.value("tributary_jobs_pushed_total", ["kind": "import"]) == 8)
        #expect(half.value("tributary_jobs", ["state": "done"]) == 8)

        // The second half, scraped while it runs: no counter goes back.
        let secondPush = try await client.pushImport(second, entity: "User", rowsPerJob: 500)
        var previous = half
        var scrapes = 0
        func finished() async throws -> Bool {
            let batch = try await client.batchStatus(secondPush.batch)
            return batch.doneJobs + batch.deadJobs + batch.cancelledJobs == batch.totalJobs
        }
        while try await !finished() || scrapes == 0 {
            let now = try await Self.scrape(url)
            for name in ["tributary_rows_committed_total", "tributary_commits_total"] {
                #expect((now.value(name) ?? 0) >= (previous.value(name) ?? 0), "\(name) went back")
            }
            previous = now
            scrapes += 1
        }
        _ = try await client.finish(secondPush.batch)

        let database = try DatabaseQueue(path: coordinator.storePath)
        let (objects, done, lastSeq) = try await database.read { db in
            (
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM User") ?? -1,
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_jobs WHERE state = 'done'") ?? -1,
                try Int.fetchOne(db, sql: "SELECT MAX(seq) FROM tributary_history") ?? -1
            )
        }
        // The gauges are read from the status at the scrape: the first scrape after the import shows it.
        let end = try await Self.scrape(url)
        #expect(objects == 8_000)
        #expect(end.value("tributary_rows_committed_total") == Double(objects))
        #expect(end.value("tributary_jobs_done_total", ["kind": "import"]) == Double(done))
        #expect(end.value("tributary_jobs_started_total", ["kind": "import"]) == Double(done))
        #expect(end.value("tributary_jobs", ["state": "done"]) == Double(done))
        #expect(end.value("tributary_commits_total") == Double(lastSeq))
        #expect(end.value("tributary_history_newest_seq") == Double(lastSeq))
        #expect(end.value("tributary_workers_connected") == 2)
        #expect((end.value("tributary_store_bytes") ?? 0) > 0)
        #expect(end.value("tributary_group_commit_rows_sum") == Double(objects))
        #expect(end.value("tributary_job_run_seconds_count", ["kind": "import"]) == Double(done))
        #expect((end.value("tributary_save_commit_seconds_count") ?? 0) >= Double(done))

        // A refusal is counted by its code. (An action without X-Tributary-Action is refused before it is asked.)
        let unasked = try await HTTPRequests.send(url + "api/jobs/999999/retry", method: "POST")
        #expect(unasked.status == 403, "\(unasked.body)")
        let (status, body) = try await HTTPRequests.send(
            url + "api/jobs/999999/retry", method: "POST", headers: ["X-Tributary-Action": "1"])
        #expect(status == 404, "\(body)")
        #expect(body.contains(#""code":"UNKNOWN_JOB""#), "\(body)")
        let refused = try await Self.scrape(url)
        #expect((refused.value("tributary_messages_refused_total", ["code": "UNKNOWN_JOB"]) ?? 0) >= 1)

        // Prometheus conventions: every family is Tributary's, counters end in _total, durations in _seconds,
        // sizes in _bytes (prometheus_client names a counter's family without its _total).
        for (family, type) in refused.families {
            #expect(family.hasPrefix("tributary_") || family.hasPrefix("process_"), "\(family)")
            if type == "counter" {
                #expect(refused.samples.contains { $0.name == family + "_total" }, "\(family) has no _total sample")
            }
            if family.contains("seconds") { #expect(family.hasSuffix("_seconds"), "\(family)") }
            if family.contains("bytes") { #expect(family.hasSuffix("_bytes"), "\(family)") }
        }
        #expect(scrapes >= 1)
    }

    @Test("a scrape right after a job's end shows it, though a dashboard poll read the status just before the push")
    func scrapeAfterDashboardPoll() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let url = try #require(coordinator.process.httpURL)
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        // The dashboard's poll reads the status while the store is empty.
        #expect(try await HTTPRequests.send(url + "api/dashboard").status == 200)
        let push = try await client.pushImport(
            Data(#"{"login": "ada", "name": "Ada"}\#n"#.utf8), entity: "User", rowsPerJob: 10)
        _ = try await client.finish(push.batch)
        let scrape = try await Self.scrape(url)
        let database = try DatabaseQueue(path: coordinator.storePath)
        let lastSeq = try await database.read { try Int.fetchOne($0, sql: "SELECT MAX(seq) FROM tributary_history") }
        #expect(scrape.value("tributary_jobs", ["state": "done"]) == 1)
        #expect(scrape.value("tributary_history_newest_seq") == Double(try #require(lastSeq)))
    }

    @Test("every family in a scrape has a HELP line with text, those recorded through swift-metrics included")
    func everyFamilyHasHelp() async throws {
        let directory = try TemporaryDirectory()
        let users = (0..<1_000).map { #"{"login": "user\#($0)", "name": "User \#($0)"}"# }
        let coordinator = try await TestCoordinator.start(in: directory, workers: 1)
        defer { Task { await coordinator.process.stop() } }
        let url = try #require(coordinator.process.httpURL)
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        defer { Task { await client.close() } }
        let push = try await client.pushImport(
            Data((users.joined(separator: "\n") + "\n").utf8), entity: "User", rowsPerJob: 500)
        _ = try await client.finish(push.batch)
        let (refusal, _) = try await HTTPRequests.send(
            url + "api/jobs/999999/retry", method: "POST", headers: ["X-Tributary-Action": "1"])
        #expect(refusal == 404)
        // A paused queue: the queue gauges are set at the scrape for the queues listed.
        _ = try await client.queue("imports", action: .pause)

        let (status, body) = try await HTTPRequests.send(url + "metrics")
        try #require(status == 200, "GET /metrics answered \(status): \(body)")
        let families = Self.families(body)
        // The families swift-metrics made once jobs ran and a request was refused, and a gauge read at the scrape.
        for name in [
            "tributary_jobs_done_total", "tributary_rows_committed_total", "tributary_job_run_seconds",
            "tributary_group_commit_rows", "tributary_messages_refused_total", "tributary_jobs",
            "tributary_queue_paused", "tributary_queue_jobs",
        ] {
            #expect(families.typed.contains(name), "\(name) is not in the scrape")
        }
        for name in families.typed {
            let help = families.help[name]?.trimmingCharacters(in: .whitespaces) ?? ""
            #expect(!help.isEmpty, "\(name) has a # TYPE line but no # HELP text")
        }
    }

    /// The families of a text exposition that have a `# TYPE` line, and each family's `# HELP` text.
    static func families(_ text: String) -> (typed: [String], help: [String: String]) {
        var typed: [String] = []
        var help: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count >= 3, fields[0] == "#" else { continue }
            switch fields[1] {
            case "TYPE": typed.append(String(fields[2]))
            case "HELP": help[String(fields[2])] = fields.count > 3 ? String(fields[3]) : ""
            default: break
            }
        }
        return (typed, help)
    }
}
