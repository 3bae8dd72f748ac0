import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What open dashboards and a Prometheus server ask of a coordinator's HTTP endpoint: every second, `snapshots`
/// GETs of `/api/dashboard` (the snapshot a page shows) and `scrapes` GETs of `/metrics`, all sent at once at each
/// tick. Every answer must be a 200; the others are counted as failures.
struct DashboardLoad: Sendable {
    /// The requests a run made, by route, and what went wrong with those that did not answer 200.
    struct Tally: Sendable {
        var snapshots = 0
        var scrapes = 0
        var failures: [String] = []
        var ticks = 0

        /// `4 snapshots and 1 scrape in 1 tick of 1 s`
        var summary: String {
            "\(Self.count(snapshots, "snapshot")) and \(Self.count(scrapes, "scrape")) in \(Self.count(ticks, "tick")) "
                + "of 1 s"
        }

        private static func count(_ number: Int, _ noun: String) -> String {
            "\(number) \(noun)\(number == 1 ? "" : "s")"
        }

        mutating func add(_ other: Tally) {
            snapshots += other.snapshots
            scrapes += other.scrapes
            failures += other.failures
            ticks += other.ticks
        }
    }

    /// The endpoint's base URL, `http://127.0.0.1:PORT/`.
    let baseURL: URL
    var snapshots = 4
    var scrapes = 1
    /// The time between ticks, which ``Tally/summary`` names.
    static let interval: Duration = .seconds(1)

    /// Sends a tick's requests at once, then the next tick's one interval after the last tick was due, until the
    /// task is cancelled; then waits for the requests still in flight (they are not cancelled) and returns the tally.
    /// The first tick is sent at once.
    func run() async -> Tally {
        let session = URLSession(configuration: Self.configuration)
        defer { session.finishTasksAndInvalidate() }
        let clock = ContinuousClock()
        var due = clock.now
        var ticks: [Task<Tally, Never>] = []
        while !Task.isCancelled {
            // Unstructured, so that stopping the ticks does not cancel the requests already sent.
            ticks.append(Task { await tick(session) })
            due += Self.interval
            do { try await clock.sleep(until: due) } catch { break }
        }
        var tally = Tally()
        for tick in ticks { tally.add(await tick.value) }
        return tally
    }

    /// One tick: the snapshots and the scrapes, all at once.
    private func tick(_ session: URLSession) async -> Tally {
        let paths = Array(repeating: "api/dashboard", count: snapshots) + Array(repeating: "metrics", count: scrapes)
        return await withTaskGroup(of: (String, String?).self) { group in
            for path in paths {
                group.addTask { (path, await Self.get(path, from: baseURL, session: session)) }
            }
            var tally = Tally(ticks: 1)
            for await (path, failure) in group {
                if let failure {
                    tally.failures.append(failure)
                } else if path == "metrics" {
                    tally.scrapes += 1
                } else {
                    tally.snapshots += 1
                }
            }
            return tally
        }
    }

    /// GETs `path`; nil when the answer is a 200 with a body, otherwise what went wrong.
    private static func get(_ path: String, from baseURL: URL, session: URLSession) async -> String? {
        var request = URLRequest(url: baseURL.appendingPathComponent(path), timeoutInterval: 10)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        do {
            let (data, response) = try await session.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard status == 200 else {
                return "GET /\(path): HTTP \(status) \(String(decoding: data.prefix(200), as: UTF8.self))"
            }
            return data.isEmpty ? "GET /\(path): an empty body" : nil
        } catch {
            return "GET /\(path): \(error)"
        }
    }

    private static var configuration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        return configuration
    }
}
