import Foundation

/// A built executable whose standard output is a pseudo-terminal of a given size, as a user's terminal is: the
/// process sees a TTY (`isatty`, `TIOCGWINSZ`), and the test reads what it draws as it comes.
final class TerminalProcess: Sendable {
    let process: Process
    /// What the process wrote so far, with the terminal's `\r\n` as `\n`.
    private let screen = Locked("")
    /// Woken with each read.
    private let reads: AsyncStream<Void>

    /// Starts `name` (beside the tests) on a terminal `columns` wide and `rows` high, standard output and error both
    /// on it, as in a shell; standard input is empty.
    init(_ name: String, _ arguments: [String], columns: Int, rows: Int = 60) throws {
        var master: Int32 = -1
        var slave: Int32 = -1
        var size = winsize(ws_row: UInt16(rows), ws_col: UInt16(columns), ws_xpixel: 0, ws_ypixel: 0)
        guard openpty(&master, &slave, nil, nil, &size) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        process = Process()
        process.executableURL = Binaries.url(name)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardError = process.standardOutput
        let (reads, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.reads = reads
        do {
            try process.run()
        } catch {
            close(master)
            close(slave)
            throw error
        }
        close(slave)
        let (screen, terminal) = (screen, master)
        // Blocking reads, on a thread of their own; the read fails (EIO) once the process and its children closed
        // the terminal.
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(terminal, &buffer, buffer.count)
                guard count > 0 else { break }
                let text = String(decoding: buffer[0..<count], as: UTF8.self)
                screen.withLock { $0 += text.replacingOccurrences(of: "\r\n", with: "\n") }
                wake.yield()
            }
            close(terminal)
            wake.finish()
        }
    }

    /// Everything written so far.
    var text: String { screen.value }

    /// Waits (bounded) until what the process wrote satisfies `condition`, and returns it.
    func waitForText(timeout: Duration = .seconds(30), _ condition: @escaping @Sendable (String) -> Bool)
        async throws -> String
    {
        let (reads, screen) = (reads, screen)
        do {
            return try await withTimeout("the terminal's text", timeout) {
                if condition(screen.value) { return screen.value }
                for await _ in reads where condition(screen.value) { return screen.value }
                if condition(screen.value) { return screen.value }
                throw TimedOut(what: "the text before the process closed its terminal")
            }
        } catch let error as TimedOut {
            throw TimedOut(what: "\(error.what); the terminal shows:\n\(screen.value)")
        }
    }

    /// Everything the process wrote, once it and its children closed the terminal (bounded): what an exited process
    /// wrote may not have been read yet when it exits.
    func waitForClose(timeout: Duration = .seconds(30)) async throws -> String {
        let (reads, screen) = (reads, screen)
        return try await withTimeout("the terminal to close", timeout) {
            for await _ in reads {}
            return screen.value
        }
    }

    /// Waits (bounded) for the process to exit, and returns its status.
    func waitForExit(timeout: Duration = .seconds(30)) async throws -> Int32 {
        let process = process
        try await waitUntil("\(process.executableURL?.lastPathComponent ?? "the process") to exit", timeout: timeout) {
            !process.isRunning
        }
        return process.terminationStatus
    }

    /// Sends SIGINT, as Ctrl-C on the terminal would.
    func interrupt() { kill(process.processIdentifier, SIGINT) }

    /// SIGKILLs the process if it still runs (clean-up after a failed expectation).
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
