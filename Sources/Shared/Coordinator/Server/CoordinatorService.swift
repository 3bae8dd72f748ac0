import Foundation
import Logging
import ServiceLifecycle
import ZeroMQ

/// The coordinator as a `Service`: serves until graceful shutdown (SIGTERM/SIGINT through a `ServiceGroup`),
/// then stops its worker pool, its sockets and its store.
public struct CoordinatorService: Service {
    private let configuration: CoordinatorConfiguration
    private let logger: Logger
    private let ready: @Sendable (CoordinatorServer) -> Void

    /// - Parameter ready: called once the sockets are bound and the pool is started, with the server (its
    ///   `listenEndpoint` and `feedEndpoint` tell where it is).
    public init(
        configuration: CoordinatorConfiguration, logger: Logger,
        ready: @escaping @Sendable (CoordinatorServer) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.ready = ready
    }

    public func run() async throws {
        let context = try ZMQContext.shared()
        // Admission first: no socket is bound before its peers are checked.
        let admission = try PeerAdmission.start(configuration, context: context)
        let publisher: FeedPublisher
        let server: CoordinatorServer
        do {
            publisher = try FeedPublisher(configuration: configuration, context: context, logger: logger)
            // Opening the store runs SQLite (schema checks, migration, re-queueing): on a thread of its own.
            let (configuration, logger) = (configuration, logger)
            do {
                server = try await BlockingWork.run {
                    try CoordinatorServer(
                        configuration: configuration, logger: logger, context: context, publisher: publisher,
                        admission: admission)
                }
            } catch {
                await publisher.stop()
                throw error
            }
        } catch {
            await admission?.stop()
            throw error
        }
        let supervisor: WorkerSupervisor?
        do {
            publisher.start(at: try await server.store.lastSequenceNumber())
            supervisor = try makeSupervisor(for: server)
        } catch {
            await server.stop(drainingWorkers: false)
            await publisher.stop()
            await admission?.stop()
            throw error
        }
        if let supervisor { await server.attach(supervisor) }
        // SIGHUP rereads the allow-list (with CURVE); without CURVE it is ignored rather than fatal.
        signal(SIGHUP, SIG_IGN)
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangup.setEventHandler { server.reloadAllowList() }
        hangup.resume()
        defer { hangup.cancel() }
        ready(server)
        // Beside the server: the feed, which outlives it (its last commits are published before the feed's socket
        // closes), and the pruning, which stops at graceful shutdown.
        let maintenance = StoreMaintenance(
            store: server.store, configuration: configuration, logger: logger,
            attemptsExpired: { server.attemptsExpired($0) })
        try await withThrowingTaskGroup(of: Void.self) { services in
            services.addTask { try await publisher.run() }
            services.addTask { try await maintenance.run() }
            services.addTask { await server.readers.run() }
            services.addTask { await server.writer.run() }
            try await withGracefulShutdownHandler {
                try await server.run()
            } onGracefulShutdown: {
                // Unstructured: the handler is synchronous; the stop it starts is awaited below.
                Task {
                    logger.info("shutting down")
                    await supervisor?.stop()
                    await server.stop()
                }
            }
            // run() returns once the sockets close, and the stop goes on to close the store: wait for it.
            // Cancelled instead, run() returned with nobody reading the sockets: stop without waiting for saves.
            await server.stop(drainingWorkers: !Task.isCancelled)
            // The feed closes after the server's last commits were handed to it; then admission ends.
            await publisher.stop()
            await admission?.stop()
            services.cancelAll()
        }
        logger.info("stopped")
    }

    private func makeSupervisor(for server: CoordinatorServer) throws -> WorkerSupervisor? {
        if configuration.localWorkers > 0 {
            guard let executable = configuration.workerExecutable else {
                throw ConfigurationError(message: "--workers needs a worker executable (--worker-path)")
            }
            let pool = WorkerSupervisor(
                count: configuration.localWorkers, executable: executable,
                arguments: ["--connect", server.listenEndpoint] + configuration.workerArguments, logger: logger,
                onExit: { pid, name in server.workerExited(pid: pid, name: name) })
            try pool.start()
            return pool
        }
        return nil
    }
}
