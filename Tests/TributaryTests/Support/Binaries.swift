import Foundation
import TributaryCommandSupport

@testable import TributaryDemo

/// The built executables (swift test builds them beside the test bundle) and ways to run them.
enum Binaries {
    static var directory: URL {
        var url = Bundle.main.bundleURL
        // The test runner may be the .xctest bundle itself or a tool inside the build directory.
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("tributary-coordinator").path),
            url.pathComponents.count > 1
        {
            url.deleteLastPathComponent()
        }
        return url
    }

    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Runs an executable to completion.
    /// - Returns: its exit status, standard output and standard error.
    /// - Throws: ``TimedOut`` if it has not exited within `timeout`.
    static func run(
        _ name: String, _ arguments: [String], environment: [String: String]? = nil, timeout: Duration = .seconds(600)
    ) async throws -> (status: Int32, output: String, error: String) {
        try await run(executable: url(name), arguments, environment: environment, timeout: timeout)
    }

    /// Runs an executable given by its path to completion (see ``run(_:_:environment:timeout:)``).
    static func run(
        executable: URL, _ arguments: [String], environment: [String: String]? = nil, timeout: Duration = .seconds(600)
    ) async throws -> (status: Int32, output: String, error: String) {
        let started = try StartedProcess.start(executable: executable, arguments, environment: environment)
        defer { started.kill() }
        let (status, output, error) = try await started.finish(timeout: timeout)
        return (status, output.joined(separator: "\n"), error.joined(separator: "\n"))
    }
}

/// A coordinator process for one test, on free loopback ports, with its store and model in `directory`.
struct TestCoordinator {
    let process: CoordinatorProcess
    let storePath: String
    let modelPath: String
    let logPath: String

    /// - Parameter storePath: where the store is; by default `store.sqlite` in `directory`.
    static func start(
        in directory: TemporaryDirectory, workers: Int, modelJSON: String = DemoData.modelJSON,
        arguments extra: [String] = [], storePath: String? = nil
    ) async throws -> TestCoordinator {
        let modelPath = try directory.write("model.json", modelJSON)
        let storePath = storePath ?? directory.path("store.sqlite")
        let logPath = directory.path("coordinator.log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = try await CoordinatorProcess.start(
            executable: Binaries.url("tributary-coordinator"),
            arguments: [
                "--store", storePath, "--model", modelPath, "--listen", "tcp://127.0.0.1:*",
                "--feed", "tcp://127.0.0.1:*", "--workers", String(workers), "--log-level", "info",
            ] + extra, log: try FileHandle(forWritingTo: URL(fileURLWithPath: logPath)))
        return TestCoordinator(process: process, storePath: storePath, modelPath: modelPath, logPath: logPath)
    }

    /// Runs `body` with the coordinator, then stops it (also when `body` throws) and returns its exit status.
    static func with<T>(
        in directory: TemporaryDirectory, workers: Int, modelJSON: String = DemoData.modelJSON,
        arguments extra: [String] = [], _ body: (TestCoordinator) async throws -> T
    ) async throws -> (T, Int32) {
        let coordinator = try await start(in: directory, workers: workers, modelJSON: modelJSON, arguments: extra)
        do {
            let value = try await body(coordinator)
            return (value, await coordinator.process.stop())
        } catch {
            await coordinator.process.stop()
            throw error
        }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}
