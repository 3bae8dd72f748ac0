import TributaryClient
import TributaryCore

/// Pushes many jobs as one batch in messages of bounded size and count, so that a large file never makes one huge
/// message (the coordinator takes at most 64 MiB) nor one long write transaction.
///
/// A spec's ``/TributaryCore/JobSpec/afterPushed`` names earlier specs of the whole push; a parent sent in an earlier
/// message is named by the id the coordinator gave it (``/TributaryCore/JobSpec/afterJobs``), one in the same message
/// by its position in that message.
public struct JobPusher: Sendable {
    /// The most bytes of specs (payloads and the rest, roughly as encoded) sent in one `PushJobs` message.
    public static let bytesPerMessage = 8 << 20
    /// The most jobs sent in one `PushJobs` message by default: one write transaction each.
    public static let jobsPerMessage = 10_000

    let client: JobClient
    let jobsPerMessage: Int

    /// A pusher that sends through `client`, at most `jobsPerMessage` jobs per message.
    public init(client: JobClient, jobsPerMessage: Int = Self.jobsPerMessage) {
        self.client = client
        self.jobsPerMessage = max(1, jobsPerMessage)
    }

    /// Pushes `specs` in order as one batch (`batch`, or one the coordinator names when empty), with `onComplete` as
    /// the batch's callback (sent with the last message, so the jobs of the first cannot finish the batch before the
    /// rest are pushed).
    /// - Returns: the batch, an id per spec, and the positions of specs not enqueued because a waiting, queued or
    ///   running job holds their unique key (their id is that job's).
    /// - Throws: ``JobPusherError`` when the coordinator refuses a message after earlier ones were pushed (it says
    ///   which); the coordinator's error when it refuses the first.
    public func push(_ specs: [JobSpec], batch named: String = "", onComplete: JobSpec? = nil) async throws
        -> PushedBatch
    {
        var pushed = PushedBatch(batch: named, ids: [])
        var start = 0
        while start < specs.count {
            let end = messageEnd(specs, from: start)
            let group = specs[start..<end].map { spec in Self.resolvingEarlierParents(spec, sent: pushed.ids, at: start)
            }
            do {
                let reply = try await client.push(
                    group, batch: pushed.batch, onComplete: end == specs.count ? onComplete : nil)
                pushed = pushed.appending(reply)
            } catch let error where start > 0 {
                throw JobPusherError(pushed: pushed, total: specs.count, underlying: error)
            }
            start = end
        }
        return pushed
    }

    /// Where the message that starts at `start` ends: before the spec that would take it past the byte budget, the
    /// job count, or a sum of totals the coordinator cannot add up (a spec over the budget goes alone).
    private func messageEnd(_ specs: [JobSpec], from start: Int) -> Int {
        var end = start
        var bytes = 0
        var totals: Int64 = 0
        while end < specs.count && end - start < jobsPerMessage {
            let size = Self.estimatedBytes(specs[end])
            let (sum, overflow) = totals.addingReportingOverflow(Int64(clamping: specs[end].total))
            if end > start && (bytes + size > Self.bytesPerMessage || overflow) { break }
            bytes += size
            totals = sum
            end += 1
        }
        return end
    }

    /// `spec` as sent in a message whose first spec is spec `start` of the push, once the specs before it were sent
    /// and given `sent` ids: its earlier parents become job ids, its parents in this message positions in it.
    static func resolvingEarlierParents(_ spec: JobSpec, sent: [Int64], at start: Int) -> JobSpec {
        guard start > 0, !spec.afterPushed.isEmpty else { return spec }
        var resolved = spec
        resolved.afterJobs += spec.afterPushed.filter { $0 < start }.map { sent[$0] }
        resolved.afterPushed = spec.afterPushed.filter { $0 >= start }.map { $0 - start }
        return resolved
    }

    /// About the bytes `spec` takes in a message (each field's bytes plus a little for its framing).
    static func estimatedBytes(_ spec: JobSpec) -> Int {
        let arguments = spec.arguments.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 8 }
        let batches = spec.afterBatches.reduce(0) { $0 + $1.utf8.count + 2 }
        return 64 + spec.payload.count + spec.kind.utf8.count + arguments + (spec.uniqueKey?.utf8.count ?? 0)
            + spec.queue.utf8.count + batches + 10 * (spec.afterJobs.count + spec.afterPushed.count)
    }
}

/// A push the coordinator refused part of the way: the messages before the refused one were pushed.
public struct JobPusherError: Error, CustomStringConvertible {
    /// What was pushed: the batch, and the ids of the specs before the refused message.
    public let pushed: PushedBatch
    /// How many specs the push had.
    public let total: Int
    /// The coordinator's refusal.
    public let underlying: any Error

    public var description: String {
        "\(underlying) (the first \(pushed.ids.count) of \(total) jobs were pushed, as batch \(pushed.batch); the rest were not)"
    }
}
