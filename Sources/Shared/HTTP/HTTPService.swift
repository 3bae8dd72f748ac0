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
/// whose request handlers it calls; docs/operations.md describes each route.
public struct HTTPService: Service {
    private let endpoint: HTTPEndpoint
    private let server: CoordinatorServer
    private let exporter: MetricsExporter
    private let logger: Logger
    private let listening: @Sendable (String) -> Void
    private let rates: RateHistory
    /// The dashboard's snapshot, made at most once a second.
    private let snapshots: RecentValue<DashboardSnapshot>

    /// - Parameter listening: called with the dashboard's URL once the port is bound.
    public init(
        endpoint: HTTPEndpoint, server: CoordinatorServer, exporter: MetricsExporter, logger: Logger,
        listening: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.endpoint = endpoint
        let rates = RateHistory(start: server.totals.started)
        self.server = server
        self.rates = rates
        snapshots = RecentValue(maximumAge: .milliseconds(900)) {
            try await DashboardSnapshot.read(from: server, rates: rates)
        }
        self.exporter = exporter
        self.logger = logger
        self.listening = listening
    }

    public func run() async throws {
        let router = Router(context: TributaryRequestContext.self)
        let access = HTTPAccess(token: endpoint.token)
        Routes(server: server, access: access, exporter: exporter, snapshots: snapshots)
            .add(to: router)
        let app = endpoint.application(
            router: router, serving: "HTTP endpoint serving", logger: logger, listening: listening)
        let (rates, totals) = (self.rates, server.totals)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                // One sample a second for the chart, until the service shuts down.
                for await _ in AsyncTimerSequence.seconds(1).cancelOnGracefulShutdown() { rates.sample(totals) }
            }
            group.addTask { try await app.run() }
        }
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
