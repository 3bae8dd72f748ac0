import Foundation
import TributaryDemo

extension CoordinatorProcess {
    /// A coordinator on a new store of the demo model, its files in `directory`, on free loopback ports.
    public struct DemoStore: Sendable {
        public let process: CoordinatorProcess
        public let storePath: String
        public let logPath: String
    }

    /// Writes the demo model into `directory` (created if needed) and starts a coordinator on a store there,
    /// logging to `coordinator.log` beside it.
    /// - Parameters:
    ///   - arguments: further arguments, such as `--workers 2`.
    ///   - modelJSON: the model written, the demo model by default (a version of it, such as one declaring indexes).
    public static func startDemoStore(
        in directory: URL, arguments: [String], modelJSON: String = DemoData.modelJSON
    ) async throws -> DemoStore {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let model = directory.appendingPathComponent("model.json")
        try Data(modelJSON.utf8).write(to: model)
        let store = directory.appendingPathComponent("store.sqlite").path
        let log = directory.appendingPathComponent("coordinator.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = try await start(
            executable: Executables.sibling("tributary-coordinator"),
            arguments: [
                "--store", store, "--model", model.path, "--listen", "tcp://127.0.0.1:*",
                "--feed", "tcp://127.0.0.1:*",
            ] + arguments, log: try FileHandle(forWritingTo: log))
        return DemoStore(process: process, storePath: store, logPath: log.path)
    }
}
