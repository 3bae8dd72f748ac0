import ArgumentParser
import Logging
import ServiceLifecycle
import TributaryClient
import TributaryMessaging

/// `triage-worker`: a worker process with a job kind of its own ("triage", see ``TriageHandler``) next to the
/// built-in import. Build it with `swift build --product triage-worker`; run it against a coordinator with
/// `triage-worker --connect tcp://127.0.0.1:7400`, then push a job: `tributary push --kind triage
/// --argument min_additions=500` (or from code, a `JobSpec` of that kind).
@main
struct TriageWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "triage-worker", abstract: "A sample Tributary worker with a custom job kind, 'triage'.")

    @Option(help: ArgumentHelp("The coordinator's jobs/control endpoint.", valueName: "endpoint"))
    var connect = "tcp://127.0.0.1:7400"

    func run() async throws {
        var logger = Logger(label: "triage-worker")
        logger.logLevel = .info
        var configuration = WorkerConfiguration()
        configuration.endpoint = connect
        configuration.register(TriageHandler())
        let worker = WorkerService(configuration: configuration, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: worker)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        await MessagingRuntime.shutDown()  // sends the worker's goodbye before the process exits
    }
}
