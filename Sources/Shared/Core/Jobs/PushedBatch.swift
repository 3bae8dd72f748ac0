/// What a push enqueued (`JobClient/push(_:batch:onComplete:)`): the batch the jobs went into and a job id for each
/// spec pushed, in order.
///
/// A spec whose unique key a waiting, queued or running job holds is not enqueued: its position is in
/// ``duplicates`` and its id is that job's.
public struct PushedBatch: Sendable, Equatable {
    /// The batch: the name pushed with, or the one the coordinator made.
    public var batch: String
    /// One id per pushed spec, in order.
    public var ids: [Int64]
    /// The positions (in ``ids``) of specs not enqueued because another job holds their unique key.
    public var duplicates: [Int]

    /// A push's result.
    public init(batch: String, ids: [Int64], duplicates: [Int] = []) {
        self.batch = batch
        self.ids = ids
        self.duplicates = duplicates
    }

    /// This push followed by `next`, a later push into the same batch: positions in `next` come after these.
    public func appending(_ next: PushedBatch) -> PushedBatch {
        PushedBatch(
            batch: next.batch, ids: ids + next.ids, duplicates: duplicates + next.duplicates.map { ids.count + $0 })
    }
}
