import TributaryClient
import TributaryProtocol

/// Pushes many jobs as one batch in messages of bounded size, so a large file never makes one huge message.
public struct ImportPusher: Sendable {
    /// The most payload bytes sent in one PushJobs message.
    public static let bytesPerMessage = 8 << 20

    let client: JobClient

    public init(client: JobClient) {
        self.client = client
    }

    /// Pushes `specs` in order as one batch (`batch`, or one the coordinator names when empty), with `onComplete` as
    /// the batch's callback (sent with the last message, so the jobs of the first cannot finish the batch before the
    /// rest are pushed).
    /// - Returns: the batch, an id per spec, and the indexes of specs not enqueued because a queued or running
    ///   job holds their unique key (their id is that job's).
    public func push(_ specs: [Tributary_V1_JobSpec], batch named: String = "", onComplete: Tributary_V1_JobSpec? = nil)
        async throws -> (batch: String, jobIDs: [UInt64], duplicates: [Int])
    {
        var batch = named
        var ids: [UInt64] = []
        var duplicates: [Int] = []
        var group: [Tributary_V1_JobSpec] = []
        var bytes = 0
        func flush(last: Bool = false) async throws {
            guard !group.isEmpty else { return }
            let reply = try await client.push(group, batch: batch, onComplete: last ? onComplete : nil)
            batch = reply.batch
            duplicates += reply.duplicates.map { ids.count + Int($0) }
            ids += reply.jobIds
            group.removeAll()
            bytes = 0
        }
        for spec in specs {
            if bytes + spec.payload.count > Self.bytesPerMessage { try await flush() }
            group.append(spec)
            bytes += spec.payload.count
        }
        try await flush(last: true)
        return (batch, ids, duplicates)
    }
}
