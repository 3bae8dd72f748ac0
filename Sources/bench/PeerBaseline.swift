import Foundation

/// The import benchmark's *peer*: what a user would write instead of Tributary — one Python process with the
/// standard library's `json` and `sqlite3`, importing the same NDJSON rows into the same logical model with
/// integer keys, finding or creating users in a dict, in 1,000-row transactions (scripts/bench/peer-import.py).
struct PeerBaseline {
    /// The script, found from this source file's place in the repository (`make bench` runs from there).
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/bench/peer-import.py")

    let input: Data
    let directory: URL

    /// Runs the script and returns the pull requests per second it reports.
    func run() throws -> Double {
        let file = directory.appendingPathComponent("peer-input.ndjson")
        try input.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", Self.script.path, file.path, directory.appendingPathComponent("peer.sqlite").path,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, let rate = Double(text) else {
            throw BaselineError("\(Self.script.path) failed (status \(process.terminationStatus)): \(text)")
        }
        return rate
    }
}
