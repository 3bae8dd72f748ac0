import Logging
import Tributary

/// A `WorkerService` running in the test process against a real coordinator, with handlers of the test's own.
enum InProcessWorker {
    /// Starts the worker; cancel the returned task to stop it.
    static func start(endpoint: String, handlers: [any JobHandler], curve: CurveClientKeys? = nil) -> Task<
        Void, any Error
    > {
        var configuration = WorkerConfiguration()
        configuration.endpoint = endpoint
        configuration.curve = curve
        for handler in handlers { configuration.register(handler) }
        var logger = Logger(label: "test.worker")
        logger.logLevel = .critical
        return Task { [configuration, logger] in
            try await WorkerService(configuration: configuration, logger: logger).run()
        }
    }
}
