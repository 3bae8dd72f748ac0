import TributaryClient
import TributaryCore

/// Pushes many jobs as one batch in messages of bounded size, so a large file never makes one huge message.
public struct ImportPusher: Sendable {
    /// The most payload bytes sent in one PushJobs message.
    public static let bytesPerMessage = 8 << 20

    let client: JobClient

    /// A pusher that sends through `client`.
    public init(client: JobClient) {
        self.client = client
    }

    /// Pushes `specs` in order as one batch (`batch`, or one the coordinator names when empty), with `onComplete` as
    /// the batch's callback (sent with the last message, so the jobs of the first cannot finish the batch before the
    /// rest are pushed).
    /// - Returns: the batch, an id per spec, and the positions of specs not enqueued because a queued or running
    ///   job holds their unique key (their id is that job's).
    public func push(_ specs: [JobSpec], batch named: String = "", onComplete: JobSpec? = nil) async throws
        -> PushedBatch
    {
        var pushed = PushedBatch(batch: named, ids: [])
        var group: [JobSpec] = []
        var bytes = 0
        func flush(last: Bool = false) async throws {
            guard !group.isEmpty else { return }
            let reply = try await client.push(group, batch: pushed.batch, onComplete: last ? onComplete : nil)
            pushed = pushed.appending(reply)
            group.removeAll()
            bytes = 0
        }
        for spec in specs {
            if bytes + spec.payload.count > Self.bytesPerMessage { try await flush() }
            group.append(spec)
            bytes += spec.payload.count
        }
        try await flush(last: true)
        return pushed
    }
}
