import Foundation
import Logging
import ServiceLifecycle
import ZeroMQ

/// The coordinator as a `Service`: its parts in one `ServiceGroup` — admission, the feed publisher, the reader
/// pool, the writer, the router, maintenance and the local pool — serving until graceful shutdown (SIGTERM/SIGINT
/// through the executable's group), then stopping in the reverse order; the store closes after all of them.
public struct CoordinatorService: Service {
    let configuration: CoordinatorConfiguration
    let logger: Logger
    /// Set while the coordinator is its cluster's primary (``ClusterNode``).
    let primary: PrimaryReplication?
    private let ready: @Sendable (CoordinatorServer) -> Void
    private let services: @Sendable (CoordinatorServer) -> [any Service]

    /// A coordinator as `configuration` says, serving once its service group runs it.
    ///
    /// - Parameters:
    ///   - configuration: the store, the model, the endpoints, the local pool and the limits.
    ///   - logger: where the coordinator logs.
    ///   - services: more services that serve beside the router (the HTTP endpoint), made once it exists; they
    ///     start before the router and stop after it, so they still answer while it drains.
    ///   - ready: called once the sockets are bound and the pool is started, with the server (its
    ///     `listenEndpoint` and `feedEndpoint` tell where it is).
    public init(
        configuration: CoordinatorConfiguration, logger: Logger,
        services: @escaping @Sendable (CoordinatorServer) -> [any Service] = { _ in [] },
        ready: @escaping @Sendable (CoordinatorServer) -> Void = { _ in }
    ) {
        self.init(configuration: configuration, logger: logger, primary: nil, services: services, ready: ready)
    }

    /// A coordinator as above; with `primary`, its cluster's primary (``ClusterNode``).
    init(
        configuration: CoordinatorConfiguration, logger: Logger, primary: PrimaryReplication?,
        services: @escaping @Sendable (CoordinatorServer) -> [any Service],
        ready: @escaping @Sendable (CoordinatorServer) -> Void
    ) {
        self.configuration = configuration
        self.logger = logger
        self.primary = primary
        self.services = services
        self.ready = ready
    }

    public func run() async throws {
        // A pool that could not start is refused before the store is opened: a refused start changes nothing on disk.
        let workerExecutable = try checkedWorkerExecutable()
        let context = try ZMQContext.shared()
        // Admission first: no socket is bound before its peers are checked.
        let admission = try PeerAdmission.start(configuration, context: context)
        let server: CoordinatorServer
        do {
            server = try await makeServer(context: context, admission: admission)
        } catch {
            await admission?.stop()
            throw error
        }
        let publisher = server.parts.publisher
        let supervisor: WorkerSupervisor?
        do {
            publisher.start(at: try await server.store.feed.lastPosition())
            supervisor = try makeSupervisor(for: server, executable: workerExecutable)
        } catch {
            await server.stop(drainingWorkers: false)
            await publisher.stop()
            await close(server.store)
            await admission?.stop()
            throw error
        }
        if let supervisor { server.attach(supervisor) }
        // SIGHUP rereads the allow-list (with CURVE); without CURVE it is ignored rather than fatal.
        signal(SIGHUP, SIG_IGN)
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangup.setEventHandler { server.reloadAllowList() }
        hangup.resume()
        defer { hangup.cancel() }
        ready(server)
        let maintenance = StoreMaintenance(
            writer: server.writer, configuration: configuration, logger: logger,
            attemptsExpired: { server.attemptsExpired($0) })
        // Started in this order and shut down in the reverse (ServiceGroup's rule): the pool's workers drain while
        // the router takes their saves; maintenance stops; the router drains the other workers, has the writer
        // commit and answer what came, publishes the last commits and closes its loop (the ROUTER and the feed's
        // XPUB); the writer's loop ends; the readers finish; the feed's heartbeats stop; admission ends once no socket
        // needs it.
        var services: [any Service] = []
        if let admission { services.append(admission) }
        services += [publisher, server.readers, server.writer.pipeline, server.writer] as [any Service]
        services += self.services(server)
        let schedules = ScheduleService(
            store: server.store, writer: server.writer, logger: logger, jobsQueued: { server.jobsQueued() })
        services += [server, maintenance, schedules] as [any Service]
        if let primary {
            services.append(
                LeftRunningRequeue(
                    writer: server.writer, workerIDPrefix: primary.workerIDPrefix, window: primary.jobAdoptionWindow,
                    logger: logger,
                    queued: { server.jobsQueued() }))
        }
        if let supervisor { services.append(supervisor) }
        let group = ServiceGroup(
            configuration: .init(
                services: services.map {
                    .init(
                        service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                logger: logger))
        do {
            try await group.run()
        } catch {
            await close(server)
            throw error
        }
        await close(server)
        logger.info("stopped")
    }

    /// Closes the store once every service that uses it has returned: reads still running after a cancellation
    /// finish first, as none may open a connection once it is closed.
    private func close(_ server: CoordinatorServer) async {
        await server.stop(drainingWorkers: false)
        await server.readers.finish()
        await close(server.store)
    }

    /// Closes the store: SQLite's last checkpoint waits on the disk, so not on the cooperative pool.
    func close(_ store: RootStore) async {
        do {
            try await BlockingWork.run { try store.close() }
        } catch {
            logger.error("cannot close the store", metadata: ["error": "\(error)"])
        }
    }

    /// The local pool's executable, checked: nil without a pool.
    /// - Throws: ``ConfigurationError`` naming the path when there is a pool and no executable file to start it from.
    private func checkedWorkerExecutable() throws -> URL? {
        guard configuration.localWorkers > 0 else { return nil }
        guard let executable = configuration.workerExecutable else {
            throw ConfigurationError(message: "--workers needs a worker executable (--worker-path)")
        }
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw ConfigurationError(
                message: "the worker executable \(executable.path) (--worker-path) is missing or not executable")
        }
        return executable
    }

    private func makeSupervisor(for server: CoordinatorServer, executable: URL?) throws -> WorkerSupervisor? {
        guard let executable else { return nil }
        // A pool worker gets the drain's grace period to finish its jobs, as other workers do, then hands back those
        // still running itself; it is killed only if it is still there 3 s later (its goodbye lingers up to 2 s).
        let grace = configuration.drainGracePeriod
        let pool = WorkerSupervisor(
            count: configuration.localWorkers, executable: executable,
            arguments: ["--connect", server.listenEndpoint, "--shutdown-seconds", "\(grace.seconds)"]
                + configuration.workerArguments,
            logger: logger, stopTimeout: grace + .seconds(3),
            onExit: { pid, name in server.workerExited(pid: pid, name: name) })
        try pool.start()
        return pool
    }
}
