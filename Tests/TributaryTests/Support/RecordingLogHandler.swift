import Logging

/// A log handler that keeps what is logged, for tests of what a component logs.
struct RecordingLogHandler: LogHandler {
    /// One logged message.
    struct Entry: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: [String: String]
    }

    let entries: Locked<[Entry]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        entries.withLock {
            $0.append(Entry(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
        }
    }

    /// A logger that records into `entries`.
    static func logger(into entries: Locked<[Entry]>) -> Logger {
        Logger(label: "test") { _ in RecordingLogHandler(entries: entries) }
    }
}
