import Foundation

/// A `tributary-coordinator` child process, started and stopped by the demo (and by tests).
///
/// Start waits for the coordinator's "ready" line on standard output and reads the endpoints it bound from it,
/// then for its HTTP endpoint's line. Without `--http` in its arguments the HTTP endpoint takes a free loopback
/// port (several coordinators started this way run side by side).
public final class CoordinatorProcess: Sendable {
    /// The jobs/control endpoint the coordinator bound.
    public let listenEndpoint: String
    /// The feed endpoint the coordinator bound.
    public let feedEndpoint: String
    /// The dashboard's URL (its HTTP endpoint); nil with `--http off`.
    public let httpURL: String?
    private let process: Process

    private init(process: Process, listen: String, feed: String, http: String?) {
        self.process = process
        self.listenEndpoint = listen
        self.feedEndpoint = feed
        self.httpURL = http
    }

    /// The process id.
    public var pid: Int32 { process.processIdentifier }

    /// Starts the coordinator and waits for it to serve.
    /// - Parameters:
    ///   - arguments: its arguments (`--store`, `--model`, ...).
    ///   - log: where its standard error goes.
    ///   - timeout: how long to wait for the ready line.
    public static func start(
        executable: URL, arguments: [String], log: FileHandle, timeout: Duration = .seconds(30)
    ) async throws -> CoordinatorProcess {
        let process = Process()
        process.executableURL = executable
        let http =
            arguments.firstIndex(of: "--http").map { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : "" }
            ?? arguments.first { $0.hasPrefix("--http=") }.map { String($0.dropFirst("--http=".count)) }
        process.arguments = http == nil ? arguments + ["--http", "127.0.0.1:*"] : arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let lines = LineReader(output.fileHandleForReading)
        // A coordinator that neither serves nor exits in time is stopped, which ends the lines below.
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            if process.isRunning { process.terminate() }
        }
        defer { watchdog.cancel() }
        var endpoints: (listen: String, feed: String)?
        for await line in lines.lines {
            let fields = Dictionary(
                line.split(separator: " ").compactMap { field -> (String, String)? in
                    let parts = field.split(separator: "=", maxSplits: 1)
                    return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
                }, uniquingKeysWith: { $1 })
            if line.hasPrefix("tributary-coordinator ready") {
                guard let listen = fields["jobs"], let feed = fields["feed"] else { break }
                if http == "off" { return CoordinatorProcess(process: process, listen: listen, feed: feed, http: nil) }
                endpoints = (listen, feed)
            } else if let endpoints, line.hasPrefix("tributary-coordinator http="), let url = fields["http"] {
                return CoordinatorProcess(process: process, listen: endpoints.listen, feed: endpoints.feed, http: url)
            }
        }
        if process.isRunning { process.terminate() }
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        throw CoordinatorStartError(
            message: "tributary-coordinator exited (status \(process.terminationStatus)) before it was ready")
    }

    /// Sends SIGTERM without waiting: the coordinator drains and stops (``stop()`` waits for it).
    public func terminate() {
        if process.isRunning { process.terminate() }
    }

    /// Sends SIGTERM and waits for the process to exit.
    /// - Returns: its exit status.
    @discardableResult
    public func stop() async -> Int32 {
        if process.isRunning { process.terminate() }
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        return process.terminationStatus
    }
}

/// The coordinator did not get to serving.
public struct CoordinatorStartError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Splits what a pipe delivers into lines, as an `AsyncStream`.
public final class LineReader: Sendable {
    /// The lines, without their newline; finishes at end of file.
    public let lines: AsyncStream<String>

    public init(_ handle: FileHandle) {
        let (lines, continuation) = AsyncStream.makeStream(of: String.self)
        self.lines = lines
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    continuation.yield(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
            if !buffer.isEmpty { continuation.yield(String(decoding: buffer, as: UTF8.self)) }
            continuation.finish()
        }
    }
}
