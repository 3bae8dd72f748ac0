import Foundation

/// Where the coordinator listens by default, and the environment variables that override it for clients.
public enum Endpoints {
    /// The jobs/control ROUTER.
    public static let defaultListen = "tcp://127.0.0.1:7400"
    /// The change feed PUB.
    public static let defaultFeed = "tcp://127.0.0.1:7401"
    /// Environment variable naming the jobs/control endpoint for clients and workers.
    public static let listenVariable = "TRIBUTARY_LISTEN"
    /// Environment variable naming the feed endpoint for subscribers.
    public static let feedVariable = "TRIBUTARY_FEED"

    /// The jobs/control endpoint: the flag, else the environment, else the default.
    public static func listen(_ flag: String?) -> String {
        flag ?? ProcessInfo.processInfo.environment[listenVariable] ?? defaultListen
    }

    /// The feed endpoint: the flag, else the environment, else the default.
    public static func feed(_ flag: String?) -> String {
        flag ?? ProcessInfo.processInfo.environment[feedVariable] ?? defaultFeed
    }
}
