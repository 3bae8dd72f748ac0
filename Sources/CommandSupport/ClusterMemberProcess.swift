import Foundation
import Synchronization

/// A `tributary-coordinator --cluster` process a command starts (the failover demo): the roles it prints on standard
/// output (`primary epoch=N`, `ready …`, `standby of=NAME …`), its log in a file.
public final class ClusterMemberProcess: Sendable {
    /// Its name in the cluster.
    public let name: String
    /// Where clients connect while it is primary.
    public let listen: String
    /// Where subscribers follow the feed while it is primary.
    public let feed: String
    /// Its store file.
    public let storePath: String
    /// Its standard error.
    public let logPath: String
    private let process: Process
    /// What it printed, and how far ``waitFor(_:timeout:)`` has read.
    private let printed = Printed()

    private final class Printed: Sendable {
        let state = Mutex((lines: [String](), read: 0))
    }

    /// Starts the member `name` of `cluster` on loopback `ports` (listen, feed, replication), with `arguments` added.
    public init(
        name: String, cluster: String, etcd: String, model: URL, ports: [Int], in directory: URL,
        arguments: [String] = []
    ) throws {
        self.name = name
        listen = "tcp://127.0.0.1:\(ports[0])"
        feed = "tcp://127.0.0.1:\(ports[1])"
        storePath = directory.appendingPathComponent("\(name).sqlite").path
        logPath = directory.appendingPathComponent("\(name).log").path
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else {
            throw CoordinatorStartError(message: "cannot create \(logPath)")
        }
        process = Process()
        process.executableURL = try Executables.sibling("tributary-coordinator")
        process.arguments =
            [
                "--cluster", cluster, "--name", name, "--etcd", etcd, "--store", storePath, "--model", model.path,
                "--listen", listen, "--feed", feed, "--replication-listen", "tcp://127.0.0.1:\(ports[2])",
                "--http", "off",
            ] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let lines = LineReader(output.fileHandleForReading).lines
        Task { [printed] in
            for await line in lines { printed.state.withLock { $0.lines.append(line) } }
        }
    }

    /// The process id.
    public var pid: Int32 { process.processIdentifier }

    /// Waits for the next line after those already waited for that starts with `tributary-coordinator PREFIX`,
    /// and returns it.
    /// - Throws: ``CoordinatorStartError`` when the process exits or `timeout` passes first.
    @discardableResult
    public func waitFor(_ prefix: String, timeout: Duration = .seconds(30)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        let wanted = "tributary-coordinator \(prefix)"
        while true {
            let line = printed.state.withLock { printed -> String? in
                guard
                    let index = printed.lines.indices.dropFirst(printed.read).first(where: {
                        printed.lines[$0].hasPrefix(wanted)
                    })
                else { return nil }
                printed.read = index + 1
                return printed.lines[index]
            }
            if let line { return line }
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw CoordinatorStartError(
                    message: "coordinator \(name) did not print '\(prefix)' (see \(logPath))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// SIGKILL: the host is lost. Returns at once; ``exited()`` waits for it to be gone.
    public func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    }

    /// Waits for the process to be gone, without holding a thread.
    public func exited() async {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// SIGTERM, and waits for it to exit; returns its exit status.
    @discardableResult
    public func stop() async -> Int32 {
        if process.isRunning { process.terminate() }
        await exited()
        return process.terminationStatus
    }
}
