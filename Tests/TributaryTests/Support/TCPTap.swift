import Foundation
import Testing

/// `tcp_tap.py` as a running process: a forwarder to a coordinator's port that can drop the answers coming back,
/// so that a save is committed and its answer lost.
final class TCPTap {
    /// The port the tap listens on (connect to it instead of the target).
    let port: String
    private let process: Process
    private let lines: FileHandle

    /// Starts a tap forwarding to `host:port`; with `bothWays`, ``dropAnswers()`` drops what goes to the target too
    /// (a cut link).
    init(host: String = "127.0.0.1", port target: String, bothWays: Bool = false) throws {
        process = Process()
        if bothWays {
            process.environment = ProcessInfo.processInfo.environment.merging(["TCP_TAP_BOTH_WAYS": "1"]) { $1 }
        }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3",
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("tcp_tap.py").path,
            host, target,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        lines = output.fileHandleForReading
        let first = String(decoding: lines.availableData, as: UTF8.self).split(separator: "\n").first
        port = String(try #require(first, "tcp_tap.py printed no port"))
    }

    deinit { kill(process.processIdentifier, SIGKILL) }

    /// The tap's endpoint.
    var endpoint: String { "tcp://127.0.0.1:\(port)" }

    /// Drops the answers from now on; returns once the tap says so.
    func dropAnswers() async throws { try await switchTo(SIGUSR1, "dropping") }

    /// Forwards the answers again; returns once the tap says so.
    func forwardAnswers() async throws { try await switchTo(SIGUSR2, "forwarding") }

    private func switchTo(_ signal: Int32, _ said: String) async throws {
        kill(process.processIdentifier, signal)
        let lines = lines
        // Until the word is read (a line may come in pieces, or after the port's newline).
        let heard = try await withTimeout("the tap to say \(said)", .seconds(10)) {
            var text = ""
            while !text.contains(said) {
                let data = lines.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
            }
            return text
        }
        #expect(heard.contains(said))
    }
}
