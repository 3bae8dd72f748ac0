import ArgumentParser
import TributaryMessaging

/// `--listen` for commands that talk to the coordinator's jobs/control socket.
public struct JobsEndpointOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The coordinator's jobs/control endpoint, or a cluster's members' comma-separated (env \(Endpoints.listenVariable); default \(Endpoints.defaultListen)).",
            valueName: "endpoint"))
    public var listen: String?

    @Option(
        help: ArgumentHelp(
            "This peer's CURVE secret key file, for a coordinator with CURVE (env \(CurveClientKeys.secretVariable)).",
            valueName: "path"))
    public var curveSecret: String?

    @Option(
        help: ArgumentHelp(
            "The coordinator's public key file (env \(CurveClientKeys.serverKeyVariable)).", valueName: "path"))
    public var serverKey: String?

    public init() {}

    /// The jobs/control endpoint to use: the flag, else the environment, else the default.
    public var endpoint: String { Endpoints.listen(listen) }

    /// The CURVE keys named by the flags, else by the environment; nil when none are named.
    /// - Throws: `ValidationError` naming the file or flag at fault.
    public func curveKeys() throws -> CurveClientKeys? {
        do {
            return try CurveClientKeys.resolve(secretFile: curveSecret, serverKeyFile: serverKey)
        } catch let error as KeyFileError {
            throw ValidationError(error.description)
        }
    }
}

/// `--feed` for commands that follow the coordinator's change feed.
public struct FeedEndpointOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The coordinator's feed endpoint, or a cluster's members' comma-separated (env \(Endpoints.feedVariable); default \(Endpoints.defaultFeed)).",
            valueName: "endpoint"))
    public var feed: String?

    public init() {}

    /// The feed endpoint to use: the flag, else the environment, else the default.
    public var endpoint: String { Endpoints.feed(feed) }
}
