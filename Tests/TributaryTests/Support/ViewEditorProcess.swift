import Foundation
import Testing

/// The `view-editor` example running as a process of its own: a view context in another process, driven by lines
/// on its standard input, each answered by one line on its standard output.
struct ViewEditorProcess {
    private let started: StartedProcess
    private let input: FileHandle
    /// The commit its view loaded before following the feed.
    private(set) var readySeq: UInt64 = 0

    /// Starts it against a coordinator, loading `entities`, and waits until its view is ready.
    static func start(listen: String, feed: String, entities: [String]) async throws -> ViewEditorProcess {
        let (started, input) = try StartedProcess.startTalking(
            "view-editor", ["--listen", listen, "--feed", feed] + entities.flatMap { ["--entity", $0] })
        var editor = ViewEditorProcess(started: started, input: input)
        let ready = try await editor.nextLine()
        editor.readySeq = try #require(ready.hasPrefix("ready ") ? UInt64(ready.dropFirst(6)) : nil, "\(ready)")
        return editor
    }

    /// Sends one command and returns its answer.
    func send(_ command: String) async throws -> String {
        input.write(Data((command + "\n").utf8))
        return try await nextLine()
    }

    /// The next line of its output (lines are read one at a time, in order).
    private func nextLine() async throws -> String {
        try await started.waitForOutput { _ in true }
    }

    /// Stops it.
    func stop() {
        try? input.close()
        started.kill()
    }
}
