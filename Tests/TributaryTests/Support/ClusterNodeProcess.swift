import Foundation
import GRDB
import TributaryCommandSupport

/// A `tributary-coordinator --cluster` process for a test: a member of a cluster on loopback ports of its own, its
/// store in the test's directory, its log in `NAME.log` there; standard output read line by line (the roles it
/// takes). `@unchecked Sendable`: only ``restart()`` changes it, from the test's own task, while nothing else reads
/// it.
final class ClusterNodeProcess: @unchecked Sendable {
    let name: String
    /// Where clients connect while it is primary.
    let listen: String
    /// Where subscribers follow the feed while it is primary.
    let feed: String
    let storePath: String
    let logPath: String
    private let arguments: [String]
    private var process: Process
    private var lines: AsyncStream<String>

    /// Starts the member `name` of `cluster`, on `ports` (listen, feed, replication) or free ones.
    init(
        name: String, cluster: String, etcd: [String], modelPath: String, in directory: TemporaryDirectory,
        ports given: [Int]? = nil, arguments extra: [String] = []
    ) throws {
        let ports = try given ?? LoopbackPorts.free(3)
        self.name = name
        listen = "tcp://127.0.0.1:\(ports[0])"
        feed = "tcp://127.0.0.1:\(ports[1])"
        storePath = directory.path("\(name).sqlite")
        logPath = directory.path("\(name).log")
        arguments =
            [
                "--cluster", cluster, "--name", name, "--etcd", etcd.joined(separator: ","), "--store", storePath,
                "--model", modelPath, "--listen", listen, "--feed", feed,
                "--replication-listen", "tcp://127.0.0.1:\(ports[2])", "--http", "off", "--log-level", "info",
            ] + extra
        (process, lines) = try Self.launch(arguments, log: logPath)
    }

    private static func launch(_ arguments: [String], log: String) throws -> (Process, AsyncStream<String>) {
        if !FileManager.default.fileExists(atPath: log) {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        handle.seekToEndOfFile()
        let process = Process()
        process.executableURL = Binaries.url("tributary-coordinator")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, LineReader(output.fileHandleForReading).lines)
    }

    /// Starts it again, as it was started, once it has exited.
    func restart() throws {
        (process, lines) = try Self.launch(arguments, log: logPath)
    }

    var pid: Int32 { process.processIdentifier }

    /// Waits (bounded) for the next line of output starting with `tributary-coordinator PREFIX`; returns it.
    @discardableResult
    func waitFor(_ prefix: String, timeout: Duration = .seconds(30)) async throws -> String {
        let (lines, name) = (lines, name)
        return try await withTimeout("'\(prefix)' from node \(name)", timeout) {
            for await line in lines where line.hasPrefix("tributary-coordinator \(prefix)") { return line }
            throw TimedOut(what: "'\(prefix)' before node \(name) closed its output")
        }
    }

    /// SIGKILLs it and waits for it to be gone.
    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERMs it and waits (bounded) for its exit status.
    func stop(timeout: Duration = .seconds(60)) async throws -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        Foundation.kill(process.processIdentifier, SIGTERM)
        let process = process
        try await waitUntil("node \(name) to exit", timeout: timeout) { !process.isRunning }
        return process.terminationStatus
    }

    /// A read-only connection of the test's own to the node's store (it may be running).
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: storePath, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit { kill() }
}
