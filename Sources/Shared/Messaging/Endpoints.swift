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
    /// Environment variable that, set to `1`, lets the coordinator bind beyond loopback (as `--insecure`).
    public static let insecureVariable = "TRIBUTARY_INSECURE"

    /// Whether binding `endpoint` keeps the socket on this host: `ipc://` and `inproc://`, or TCP on a loopback
    /// address (`127.0.0.0/8`, `::1`, `localhost`, the interface `lo`). Anything else — `*`, `0.0.0.0`, a host's
    /// address or interface, other transports — can be reached from elsewhere.
    public static func isLoopback(_ endpoint: String) -> Bool {
        if endpoint.hasPrefix("ipc://") || endpoint.hasPrefix("inproc://") { return true }
        guard endpoint.hasPrefix("tcp://") else { return false }
        let address = endpoint.dropFirst("tcp://".count)
        guard let colon = address.lastIndex(of: ":") else { return false }
        var host = address[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return host == "lo" || LoopbackHost.contains(host)
    }

    /// Why the coordinator will not bind `endpoint` (named by `flag`) without `--insecure`, or nil when it may.
    public static func refusal(toBind endpoint: String, flag: String) -> String? {
        guard !isLoopback(endpoint) else { return nil }
        return "\(flag) \(endpoint) is not a loopback address: without authentication anyone who can reach it could "
            + "push jobs, send change sets and read the feed. Bind 127.0.0.1 (and reach it through an SSH tunnel or "
            + "a private network you trust), serve with CURVE keys (--curve-secret and --allow), or pass --insecure (or "
            + "set \(insecureVariable)=1) to accept that."
    }

    /// The jobs/control endpoint: the flag, else the environment, else the default.
    public static func listen(_ flag: String?) -> String {
        flag ?? ProcessInfo.processInfo.environment[listenVariable] ?? defaultListen
    }

    /// The feed endpoint: the flag, else the environment, else the default.
    public static func feed(_ flag: String?) -> String {
        flag ?? ProcessInfo.processInfo.environment[feedVariable] ?? defaultFeed
    }
}
