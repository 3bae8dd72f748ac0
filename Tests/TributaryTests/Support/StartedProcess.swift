import Foundation
import TributaryCommandSupport

/// A built executable started for a test, with its standard error read line by line as it comes.
struct StartedProcess {
    let process: Process
    /// Standard error, one line at a time; read by one task at a time.
    let errorLines: AsyncStream<String>
    /// Standard output, collected.
    let outputLines: AsyncStream<String>

    /// Starts the built executable `name` (beside the tests).
    static func start(_ name: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> StartedProcess
    {
        try start(executable: Binaries.url(name), arguments, environment: environment)
    }

    /// Starts `executable`; `environment` adds to (or replaces entries of) this process's environment; `stdin`
    /// is its standard input (none when nil).
    static func start(
        executable: URL, _ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil
    ) throws -> StartedProcess {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let input = Pipe()
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        try process.run()
        if let stdin {
            // From a thread of its own: a large input would fill the pipe before the process reads it.
            let writer = input.fileHandleForWriting
            Thread.detachNewThread {
                writer.write(stdin)
                try? writer.close()
            }
        }
        return StartedProcess(
            process: process, errorLines: LineReader(error.fileHandleForReading).lines,
            outputLines: LineReader(output.fileHandleForReading).lines)
    }

    /// Starts the built executable `name` with a pipe for its standard input, for a test that talks to it line by
    /// line; its standard error is dropped.
    static func startTalking(_ name: String, _ arguments: [String]) throws -> (StartedProcess, input: FileHandle) {
        let process = Process()
        process.executableURL = Binaries.url(name)
        process.arguments = arguments
        let (input, output) = (Pipe(), Pipe())
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let started = StartedProcess(
            process: process, errorLines: AsyncStream { $0.finish() },
            outputLines: LineReader(output.fileHandleForReading).lines)
        return (started, input.fileHandleForWriting)
    }

    var pid: Int32 { process.processIdentifier }

    /// Waits (bounded) for a line of standard error that contains `text`, and returns it.
    func waitForError(containing text: String, timeout: Duration = .seconds(30)) async throws -> String {
        let lines = errorLines
        return try await withTimeout(
            "a line containing '\(text)' from \(process.executableURL?.lastPathComponent ?? "")", timeout
        ) {
            for await line in lines where line.contains(text) { return line }
            throw TimedOut(what: "'\(text)' before the process closed standard error")
        }
    }

    /// Waits (bounded) for a line of standard output that satisfies `condition`, and returns it.
    func waitForOutput(timeout: Duration = .seconds(30), _ condition: @escaping @Sendable (String) -> Bool)
        async throws -> String
    {
        let lines = outputLines
        return try await withTimeout("a line of output", timeout) {
            for await line in lines where condition(line) { return line }
            throw TimedOut(what: "the line before the process closed standard output")
        }
    }

    /// Waits (bounded) for the process to exit, and returns its status.
    func waitForExit(timeout: Duration = .seconds(30)) async throws -> Int32 {
        try await waitUntil("\(process.executableURL?.lastPathComponent ?? "the process") to exit", timeout: timeout) {
            !process.isRunning
        }
        return process.terminationStatus
    }

    /// Reads standard output and error to their end, then waits for the exit (bounded by `timeout`).
    /// - Returns: the exit status and the lines of each stream.
    func finish(timeout: Duration = .seconds(120)) async throws -> (status: Int32, output: [String], error: [String]) {
        let (output, error, process) = (outputLines, errorLines, process)
        return try await withTimeout("\(process.executableURL?.lastPathComponent ?? "a process") to exit", timeout) {
            async let out = output.reduce(into: [String]()) { $0.append($1) }
            async let err = error.reduce(into: [String]()) { $0.append($1) }
            let (stdout, stderr) = await (out, err)
            await process.exited()  // both pipes are closed: the process is exiting
            // Timed out instead (the streams end when the wait is cancelled): a running process has no status.
            try Task.checkCancellation()
            return (process.terminationStatus, stdout, stderr)
        }
    }

    /// SIGKILLs the process if it still runs (clean-up after a failed expectation).
    func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    }
}
