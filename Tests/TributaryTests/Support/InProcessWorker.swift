import Logging
import ServiceLifecycle

@testable import TributaryClient
@testable import TributaryMessaging

/// A `WorkerService` running in the test process against a real coordinator, with handlers of the test's own.
///
/// Its heartbeat interval is 10 s (the coordinator declares it lost after 30 s of silence): it shares the test
/// process's cooperative thread pool with every test running in parallel, and on a loaded 2-core machine its
/// heartbeat task was once starved past 3 × 1 s, so the coordinator took back a job a retry test was counting on.
/// Tests about liveness use a `RawWorker` or a worker process; one that shortens the heartbeat runs with the heavy
/// tests, one at a time.
enum InProcessWorker {
    /// Starts the worker; cancel the returned task to stop it.
    /// - Parameter heartbeat: shorter only where the test needs the coordinator to tell it soon that it forgot it
    ///   (and runs without tests beside it).
    static func start(
        endpoint: String, handlers: [any JobHandler], curve: CurveClientKeys? = nil, heartbeat: Duration = .seconds(10),
        concurrency: Int? = nil
    ) -> Task<Void, any Error> {
        let (configuration, logger) = setUp(
            endpoint: endpoint, handlers: handlers, curve: curve, heartbeat: heartbeat, concurrency: concurrency)
        return Task { [configuration, logger] in
            try await WorkerService(configuration: configuration, logger: logger).run()
        }
    }

    /// Starts the worker in a service group of its own, as its executable runs it: trigger the group's graceful
    /// shutdown to stop it as SIGTERM does, and await the task for its end.
    static func startStoppable(
        endpoint: String, handlers: [any JobHandler], shutdownTimeout: Duration
    ) -> (group: ServiceGroup, task: Task<Void, any Error>) {
        var (configuration, logger) = setUp(
            endpoint: endpoint, handlers: handlers, curve: nil, heartbeat: .seconds(10), concurrency: nil)
        configuration.shutdownTimeout = shutdownTimeout
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: WorkerService(configuration: configuration, logger: logger))],
                logger: logger))
        return (group, Task { try await group.run() })
    }

    private static func setUp(
        endpoint: String, handlers: [any JobHandler], curve: CurveClientKeys?, heartbeat: Duration, concurrency: Int?
    ) -> (WorkerConfiguration, Logger) {
        var configuration = WorkerConfiguration()
        configuration.endpoint = endpoint
        configuration.curve = curve
        configuration.heartbeatInterval = heartbeat
        if let concurrency { configuration.concurrency = concurrency }
        for handler in handlers { configuration.register(handler) }
        var logger = Logger(label: "test.worker")
        logger.logLevel = .critical
        return (configuration, logger)
    }
}
