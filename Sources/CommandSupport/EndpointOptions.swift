import ArgumentParser
import Tributary

/// `--listen` for commands that talk to the coordinator's jobs/control socket.
public struct JobsEndpointOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The coordinator's jobs/control endpoint (env \(Endpoints.listenVariable); default \(Endpoints.defaultListen)).",
            valueName: "endpoint"))
    public var listen: String?

    public init() {}

    /// The jobs/control endpoint to use: the flag, else the environment, else the default.
    public var endpoint: String { Endpoints.listen(listen) }
}

/// `--feed` for commands that follow the coordinator's change feed.
public struct FeedEndpointOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The coordinator's feed endpoint (env \(Endpoints.feedVariable); default \(Endpoints.defaultFeed)).",
            valueName: "endpoint"))
    public var feed: String?

    public init() {}

    /// The feed endpoint to use: the flag, else the environment, else the default.
    public var endpoint: String { Endpoints.feed(feed) }
}
