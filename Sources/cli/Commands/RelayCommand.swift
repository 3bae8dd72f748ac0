import ArgumentParser
import Foundation
import ServiceLifecycle
import TributaryClient
import TributaryCommandSupport
import TributaryMessaging

/// `tributary relay`: one subscription upstream, a feed served downstream.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Subscribe once to a coordinator's feed and serve it to subscribers elsewhere (another data centre).",
        discussion: """
            The feed is forwarded by libzmq's proxy from an XSUB connected to --upstream-feed to an XPUB bound on \
            --feed: every message as the coordinator sent it, and subscriptions upstream, so the coordinator sends \
            each message once to the relay. Subscribers' history, snapshot, status, durable-position and fetch \
            requests sent to --listen are forwarded to --upstream-listen and answered from there; anything else is \
            refused. Subscribers use the relay's --feed and --listen as they would the coordinator's (tributary \
            subscribe --feed … --listen …). Prints `tributary relay feed=ENDPOINT listen=ENDPOINT` once serving; \
            SIGTERM or SIGINT stops it. See docs/scale-out.md.
            """)

    @Option(
        help: ArgumentHelp(
            "The coordinator's feed endpoint (or another relay's), or a cluster's members' comma-separated.",
            valueName: "endpoint"))
    var upstreamFeed: String

    @Option(
        help: ArgumentHelp(
            "The coordinator's jobs/control endpoint (or another relay's listen endpoint), or a cluster's members' comma-separated: requests follow the primary.",
            valueName: "endpoint"))
    var upstreamListen: String

    @Option(help: ArgumentHelp("The feed endpoint to serve; port * picks a free one.", valueName: "endpoint"))
    var feed: String = "tcp://127.0.0.1:7501"

    @Option(
        help: ArgumentHelp(
            "The endpoint subscribers send their requests to; port * picks a free one.", valueName: "endpoint"))
    var listen: String = "tcp://127.0.0.1:7500"

    @Option(
        help:
            "Most feed messages queued per downstream subscriber; a slower one loses the rest and fills them from history."
    )
    var feedBuffer: Int32 = 1_000

    @Option(
        help: ArgumentHelp(
            "The relay's CURVE secret key file, as a subscriber of a coordinator with CURVE (env \(CurveClientKeys.secretVariable)).",
            valueName: "path"))
    var curveSecret: String?

    @Option(
        help: ArgumentHelp(
            "The coordinator's public key file (env \(CurveClientKeys.serverKeyVariable)).", valueName: "path"))
    var serverKey: String?

    @Flag(
        help:
            "Serve --feed/--listen beyond loopback without authentication (also \(Endpoints.insecureVariable)=1): anyone who reaches them reads the feed."
    )
    var insecure = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (1...1_000_000).contains(feedBuffer) else {
            throw ValidationError("--feed-buffer must be between 1 and 1000000")
        }
        guard feed != listen || feed.hasSuffix(":*") else {
            throw ValidationError("--listen and --feed must be different endpoints")
        }
        let insecureByEnvironment = ProcessInfo.processInfo.environment[Endpoints.insecureVariable] == "1"
        if !(insecure || insecureByEnvironment) {
            for (endpoint, flag) in [(listen, "--listen"), (feed, "--feed")] where !Endpoints.isLoopback(endpoint) {
                throw ValidationError(
                    "\(flag) \(endpoint) is not a loopback address: the relay serves without authentication, so "
                        + "anyone who can reach it could read the feed. Bind 127.0.0.1 (and reach it through a private "
                        + "network or tunnel you trust), or pass --insecure to accept that.")
            }
        }
        _ = try curveKeys()
    }

    private func curveKeys() throws -> CurveClientKeys? {
        do {
            return try CurveClientKeys.resolve(secretFile: curveSecret, serverKeyFile: serverKey)
        } catch let error as KeyFileError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "tributary.relay")
        var configuration = FeedRelayConfiguration(
            upstreamFeed: upstreamFeed, upstreamListen: upstreamListen, feed: feed, listen: listen)
        configuration.curve = try curveKeys()
        configuration.feedBuffer = feedBuffer
        let relay: FeedRelay
        do {
            relay = try FeedRelay(configuration: configuration, logger: logger)
        } catch {
            throw ValidationError("cannot start the relay: \(error)")
        }
        Terminal.line("tributary relay feed=\(relay.feedEndpoint) listen=\(relay.listenEndpoint)")
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: relay)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await ServiceMain.run(group, logger: logger)
    }
}
