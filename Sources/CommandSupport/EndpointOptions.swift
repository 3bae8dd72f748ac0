import ArgumentParser
import Tributary

/// `--listen` / `--feed` for client commands, defaulting to the environment, then to the loopback defaults.
public struct EndpointOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The coordinator's jobs/control endpoint (env \(Endpoints.listenVariable); default \(Endpoints.defaultListen)).",
            valueName: "endpoint"))
    public var listen: String?

    @Option(
        help: ArgumentHelp(
            "The coordinator's feed endpoint (env \(Endpoints.feedVariable); default \(Endpoints.defaultFeed)).",
            valueName: "endpoint"))
    public var feed: String?

    public init() {}

    /// The jobs/control endpoint to use.
    public var jobsEndpoint: String { Endpoints.listen(listen) }
    /// The feed endpoint to use.
    public var feedEndpoint: String { Endpoints.feed(feed) }
}
