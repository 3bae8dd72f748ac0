import ArgumentParser
import Foundation
import Logging

/// `--log-level`, shared by every Tributary executable; logs go to standard error.
public struct LoggingOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Log level: trace, debug, info, notice, warning, error or critical (env TRIBUTARY_LOG_LEVEL).",
            valueName: "level"))
    public var logLevel: String?

    public init() {}

    public func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError(
                "unknown log level '\(logLevel)'; use trace, debug, info, notice, warning, error or critical")
        }
    }

    /// Sends logs to standard error at the chosen level and returns a logger labelled `label`.
    public func makeLogger(label: String, defaultLevel: Logger.Level = .info) -> Logger {
        let name = logLevel ?? ProcessInfo.processInfo.environment["TRIBUTARY_LOG_LEVEL"]
        let level = name.flatMap(Logger.Level.init(rawValue:)) ?? defaultLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: label)
    }
}
