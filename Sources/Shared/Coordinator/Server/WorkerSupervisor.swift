import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TributaryProtocol

/// Starts and supervises the coordinator's local pool of `tributary-worker` processes.
///
/// A worker that exits is reported (so its jobs return to the queue at once) and started again after a backoff
/// that doubles from 1 s to 30 s while it keeps failing fast, and resets once it has run for a minute.
/// As a `Service` (once started) it stops the pool at graceful shutdown: the first to stop in the coordinator's
/// group, so the pool's workers drain while the router still takes their saves.
public final class WorkerSupervisor: Service, Sendable {
    private struct Slot {
        var process: Process?
        var backoff: Duration = .seconds(1)
        var startedAt: ContinuousClock.Instant = .now
        var restarts = 0
        var lastExitStatus: Int32 = 0
        /// How long each of the latest runs lasted, newest last (at most 3).
        var recentRuns: [Duration] = []
    }

    /// A run this short counts toward a crash loop.
    static let shortRun: Duration = .seconds(10)

    private struct State {
        var slots: [Slot]
        var stopping = false
        var stopBegan: ContinuousClock.Instant?
    }

    private let executable: URL
    private let arguments: [String]
    private let logger: Logger
    private let onExit: @Sendable (_ pid: Int32, _ name: String) async -> Void
    private let stopTimeout: Duration
    private let state: Mutex<State>

    /// A pool of `count` workers, started when the supervisor runs.
    ///
    /// - Parameters:
    ///   - count: how many workers to keep running.
    ///   - executable: the `tributary-worker` binary.
    ///   - arguments: its arguments (at least `--connect`).
    ///   - logger: where the pool's starts, exits and restarts are logged.
    ///   - stopTimeout: how long a graceful shutdown waits for the workers to exit after SIGTERM before it SIGKILLs
    ///     them: longer than their own `--shutdown-seconds`, so that they hand their unfinished jobs back themselves.
    ///   - onExit: told the pid and pool name of each worker that exits.
    public init(
        count: Int, executable: URL, arguments: [String], logger: Logger, stopTimeout: Duration = .seconds(10),
        onExit: @escaping @Sendable (_ pid: Int32, _ name: String) async -> Void
    ) {
        self.executable = executable
        self.arguments = arguments
        self.stopTimeout = stopTimeout
        self.logger = logger
        self.onExit = onExit
        self.state = Mutex(State(slots: Array(repeating: Slot(), count: count)))
    }

    /// Starts every worker.
    public func start() throws {
        let count = state.withLock { $0.slots.count }
        for index in 0..<count { try launch(index) }
    }

    public func run() async {
        try? await gracefulShutdown()
        await stop(timeout: stopTimeout)
    }

    /// Sends SIGTERM to every worker and waits up to `timeout` for them to exit, then SIGKILLs the rest.
    public func stop(timeout: Duration = .seconds(10)) async {
        let processes = state.withLock { state -> [Process] in
            state.stopping = true
            if state.stopBegan == nil { state.stopBegan = .now }
            return state.slots.compactMap(\.process)
        }
        for process in processes where process.isRunning { process.terminate() }
        let deadline = ContinuousClock.now + timeout
        while processes.contains(where: \.isRunning) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// When the pool's stop began (its SIGTERMs went out), once it has: the coordinator's graceful stop counts its
    /// drain from then, and hands back the jobs of a pool worker that exits meanwhile.
    public var stopBegan: ContinuousClock.Instant? { state.withLock { $0.stopBegan } }

    /// Each pool process as `tributary status` shows it: crash looping when its last 3 runs were all short.
    public var processes: [PoolProcess] {
        state.withLock { state in
            state.slots.enumerated().map { index, slot in
                PoolProcess(
                    name: Self.poolName(index),
                    pid: slot.process?.isRunning == true ? slot.process?.processIdentifier ?? 0 : 0,
                    restarts: slot.restarts, lastExitStatus: slot.lastExitStatus,
                    crashLooping: slot.recentRuns.count == 3 && slot.recentRuns.allSatisfy { $0 < Self.shortRun })
            }
        }
    }

    /// The `--name` of the pool worker in slot `index`.
    static func poolName(_ index: Int) -> String { "pool-\(index + 1)" }

    private func launch(_ index: Int) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments + ["--name", Self.poolName(index), "--parent-pid", String(getpid())]
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [self] process in
            exited(index, pid: process.processIdentifier, status: process.terminationStatus)
        }
        try process.run()
        state.withLock {
            $0.slots[index].process = process
            $0.slots[index].startedAt = .now
        }
        logger.info("started worker", metadata: ["slot": "\(index + 1)", "pid": "\(process.processIdentifier)"])
    }

    private func exited(_ index: Int, pid: Int32, status: Int32) {
        let (stopping, delay) = state.withLock { state -> (Bool, Duration) in
            var slot = state.slots[index]
            slot.process = nil
            let ran = ContinuousClock.now - slot.startedAt
            if ran > .seconds(60) { slot.backoff = .seconds(1) }
            slot.recentRuns = Array((slot.recentRuns + [ran]).suffix(3))
            slot.lastExitStatus = status
            let delay = slot.backoff
            slot.backoff = min(slot.backoff * 2, .seconds(30))
            slot.restarts += 1
            state.slots[index] = slot
            return (state.stopping, delay)
        }
        let onExit = self.onExit
        // Unstructured: started from a process's termination handler (a Foundation thread), which cannot await.
        Task {
            await onExit(pid, Self.poolName(index))
            guard !stopping else { return }
            logger.warning(
                "worker exited; restarting", metadata: ["pid": "\(pid)", "status": "\(status)", "in": "\(delay)"])
            try? await Task.sleep(for: delay)
            guard !self.state.withLock({ $0.stopping }) else { return }
            do { try self.launch(index) } catch {
                self.logger.error("cannot restart worker", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// A local pool process as `tributary status` shows it.
public struct PoolProcess: Sendable, Equatable {
    /// `pool-1`, `pool-2`, …
    public let name: String
    /// 0 while it waits to be started again.
    public let pid: Int32
    /// How many times it was started again after exiting.
    public let restarts: Int
    /// The exit status of its last run (0 while it has not exited).
    public let lastExitStatus: Int32
    /// Its last 3 runs each ended within 10 s.
    public let crashLooping: Bool

    /// As `StatusReply` carries it.
    var wire: Tributary_V1_PoolProcess {
        Tributary_V1_PoolProcess.with {
            $0.name = name
            $0.pid = pid
            $0.restarts = UInt32(clamping: restarts)
            $0.lastExitStatus = lastExitStatus
            $0.crashLooping = crashLooping
        }
    }
}
