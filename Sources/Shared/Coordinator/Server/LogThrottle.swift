import Foundation
import Logging
import TributaryCore

/// Thins out repeated log messages about one peer, so that a peer sending bad frames in a loop cannot flood the
/// log: per peer and kind of message, the first ``burst`` in a ``window`` are logged, the rest only counted, and
/// the count is logged when the window ends.
///
/// Owned by one task (it is a value); ``log(_:peer:kind:metadata:now:)`` logs or counts, ``flush(now:)``
/// reports the windows that ended with messages suppressed.
struct LogThrottle {
    /// Messages logged per peer and kind in one window.
    var burst = 5
    /// How long a window lasts from its first message.
    var window: Duration = .seconds(10)
    /// Peers tracked at once; beyond that, messages of every other peer share one count per kind.
    var maximumKeys = 1024

    private struct Key: Hashable {
        let peer: Data
        let kind: String
    }

    private struct Window {
        let start: ContinuousClock.Instant
        var logged = 0
        var suppressed = 0
        /// The last message suppressed, shown with the count.
        var lastMessage = ""
        var level: Logger.Level
    }

    private var windows: [Key: Window] = [:]
    private static let otherPeers = Data("*".utf8)

    /// Logs `message` at `level` unless this peer sent too many of this kind lately; then only counts it.
    mutating func log(
        _ message: String, level: Logger.Level = .notice, peer: Data, kind: String, metadata: Logger.Metadata,
        to logger: Logger, now: ContinuousClock.Instant = .now
    ) {
        var key = Key(peer: peer, kind: kind)
        if windows[key] == nil && windows.count >= maximumKeys {
            flush(to: logger, now: now)
            if windows.count >= maximumKeys { key = Key(peer: Self.otherPeers, kind: kind) }
        }
        var current = windows[key] ?? Window(start: now, level: level)
        if now - current.start >= window {
            report(key, current, to: logger)
            current = Window(start: now, level: level)
        }
        if current.logged < burst {
            current.logged += 1
            var metadata = metadata
            metadata["peer"] = "\(Self.describe(key.peer))"
            logger.log(level: level, "\(message)", metadata: metadata)
        } else {
            current.suppressed += 1
            current.lastMessage = metadata["error"].map { "\($0)" } ?? message
        }
        windows[key] = current
    }

    /// Reports and forgets the windows that ended; call it now and then (a timer tick).
    mutating func flush(to logger: Logger, now: ContinuousClock.Instant = .now) {
        for (key, current) in windows where now - current.start >= window {
            report(key, current, to: logger)
            windows.removeValue(forKey: key)
        }
    }

    /// How many messages are being counted rather than logged, for tests.
    var suppressedCount: Int { windows.values.reduce(0) { $0 + $1.suppressed } }

    private func report(_ key: Key, _ ended: Window, to logger: Logger) {
        guard ended.suppressed > 0 else { return }
        logger.log(
            level: ended.level, "similar messages suppressed",
            metadata: [
                "peer": "\(Self.describe(key.peer))", "kind": "\(key.kind)", "suppressed": "\(ended.suppressed)",
                "seconds": "\(window.components.seconds)", "last": "\(ended.lastMessage)",
            ])
    }

    /// A routing id as hex (the ROUTER's ids are 5 bytes).
    private static func describe(_ peer: Data) -> String {
        peer == otherPeers ? "other peers" : peer.map { String(format: "%02x", $0) }.joined()
    }
}
