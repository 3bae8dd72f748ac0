import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TributaryCoordinator
import TributaryCore

/// The coordinator's HTTP endpoint as a `Service` (Hummingbird 2): `/healthz`, `/readyz`, `/metrics`, the JSON
/// API under `/api/`, and the live dashboard at `/`. Runs in the coordinator's service group beside the router,
/// whose requests it makes (``CoordinatorServer/request(_:)``); docs/operations.md describes each route.
public struct HTTPService: Service {
    private let endpoint: HTTPEndpoint
    private let view: CoordinatorView
    private let exporter: MetricsExporter
    private let logger: Logger
    private let listening: @Sendable (String) -> Void
    private let rates: RateHistory
    private let snapshots: SnapshotCache

    /// - Parameter listening: called with the dashboard's URL once the port is bound.
    public init(
        endpoint: HTTPEndpoint, server: CoordinatorServer, exporter: MetricsExporter, logger: Logger,
        listening: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.endpoint = endpoint
        view = CoordinatorView(server: server)
        snapshots = SnapshotCache(view: view)
        rates = RateHistory(start: server.totals.started)
        self.exporter = exporter
        self.logger = logger
        self.listening = listening
    }

    public func run() async throws {
        let router = Router(context: TributaryRequestContext.self)
        let access = HTTPAccess(token: endpoint.token)
        Routes(view: view, access: access, exporter: exporter, rates: rates, snapshots: snapshots)
            .add(to: router)
        let (endpoint, listening, logger) = (self.endpoint, self.listening, self.logger)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(endpoint.host, port: endpoint.port), serverName: "tributary"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? endpoint.port
                let host = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
                let url = "http://\(host):\(port)/"
                logger.info("HTTP endpoint serving", metadata: ["url": "\(url)"])
                listening(url)
            },
            logger: logger)
        let (rates, totals) = (self.rates, view.server.totals)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                // One sample a second for the chart, until the service shuts down.
                for await _ in AsyncTimerSequence.seconds(1).cancelOnGracefulShutdown() { rates.sample(totals) }
            }
            group.addTask { try await app.run() }
        }
    }
}

/// The dashboard's snapshot, made at most once a second whoever asks (each open page's event stream, the JSON
/// API), so the coordinator's load does not grow with the pages open: callers that come while one is being made
/// wait for it.
final class SnapshotCache: Sendable {
    private let view: CoordinatorView
    private let latest = Mutex<(at: ContinuousClock.Instant, task: Task<DashboardSnapshot, any Error>)?>(nil)

    init(view: CoordinatorView) {
        self.view = view
    }

    func snapshot(rates: RateHistory) async throws -> DashboardSnapshot {
        let view = self.view
        let task = latest.withLock { latest in
            if let current = latest, current.at.duration(to: .now) < .milliseconds(900) { return current.task }
            let task = Task { try await view.snapshot(rates: rates) }
            latest = (.now, task)
            return task
        }
        return try await task.value
    }
}

/// A sequence that yields once every interval (the first after one interval).
struct AsyncTimerSequence: AsyncSequence, Sendable {
    typealias Element = Void
    let interval: Duration

    static func seconds(_ seconds: Int) -> AsyncTimerSequence { .init(interval: .seconds(seconds)) }

    struct AsyncIterator: AsyncIteratorProtocol {
        let interval: Duration
        mutating func next() async -> Void? {
            do {
                try await Task.sleep(for: interval)
                return ()
            } catch {
                return nil
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(interval: interval) }
}
