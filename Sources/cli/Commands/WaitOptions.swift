import ArgumentParser
import TributaryCommandSupport
import TributaryMessaging

/// What a push's `--wait` follows: the coordinator's feed (`--feed`), on whose `$jobs` topic the jobs' ends are
/// published, and `--log-level` (at `debug`, each check of the jobs and why it was made).
struct WaitOptions: ParsableArguments {
    @OptionGroup var feed: FeedEndpointOption

    @OptionGroup var logging: LoggingOptions

    /// Subscribes to the jobs' ends; call before pushing.
    func subscribe(curve: CurveClientKeys?) throws -> PushWait {
        let logger = logging.makeLogger(label: "tributary.push", defaultLevel: .warning)
        return try PushWait(feed: feed.endpoint, curve: curve, logger: logger)
    }
}
