import Foundation
import TributaryProtocol

/// A didSave notification from the change feed (Core Data's `NSManagedObjectContextDidSaveNotification`):
/// what one commit of the root store inserted, updated and deleted.
public struct DidSave: Sendable, Equatable {
    /// The commit's store sequence number; strictly increasing.
    public let seq: UInt64
    /// The store epoch it was committed in: a random id of the coordinator run that committed it (0 for commits of
    /// stores older than format 10). Hand it back with ``seq`` to resume (``position``): a store whose history was
    /// rewritten since (a power loss took commits back, a restore from a replica or a backup) is then told apart.
    public let epoch: UInt64
    /// When the root committed it.
    public let committedAt: Date
    /// Which worker, job, attempt and batch the change set came from.
    public let origin: Tributary_V1_Origin
    /// Inserted object ids.
    public var inserted: [ObjectID] = []
    /// Updated object ids (including inserts merged into existing objects by uniqueness).
    public var updated: [ObjectID] = []
    /// Deleted object ids.
    public var deleted: [ObjectID] = []
    /// The values written, keyed by the stored ids: `INSERT` batches with the columns the inserts set, `UPDATE`
    /// batches with the changed columns (one batch per entity and set of columns).
    public var values: [Tributary_V1_EntityBatch] = []

    /// The event of one commit from its parts (of one sequence number, at least one; with a filter, only the
    /// parts that passed it).
    package init(parts: [Tributary_V1_DidSave]) {
        precondition(!parts.isEmpty, "a didSave has at least one part")
        seq = parts[0].seq
        epoch = parts[0].epoch
        committedAt = Date(timeIntervalSince1970: parts[0].committedAt)
        origin = parts[0].origin
        for part in parts {
            inserted += Self.ids(part.insertedIds, entity: part.entity)
            updated += Self.ids(part.updatedIds, entity: part.entity)
            deleted += Self.ids(part.deletedIds, entity: part.entity)
            values += part.values
        }
    }

    private static func ids(_ bytes: Data, entity: String) -> [ObjectID] {
        stride(from: 0, to: bytes.count - bytes.count % 16, by: 16).map {
            ObjectID(entity: entity, uuid: UUID(bytes: bytes, at: bytes.startIndex + $0))
        }
    }

    /// Where a subscriber that processed this commit resumes.
    public var position: FeedPosition { FeedPosition(seq: seq, epoch: epoch) }

    /// The event as one JSON line: `{"seq":N,"position":"N:EPOCH",…,"inserted":[{"entity":"…","id":"…"}],
    /// "updated":[…],"deleted":[…]}`.
    public var jsonLine: String {
        func list(_ ids: [ObjectID]) -> String {
            "["
                + ids.map { "{\"entity\":\"\($0.entity)\",\"id\":\"\($0.uuid.uuidString.lowercased())\"}" }.joined(
                    separator: ",") + "]"
        }
        return
            "{\"seq\":\(seq),\"position\":\"\(position)\",\"committedAt\":\(committedAt.timeIntervalSince1970),\"worker\":\"\(origin.workerID)\",\"job\":\(origin.jobID),"
            + "\"inserted\":\(list(inserted)),\"updated\":\(list(updated)),\"deleted\":\(list(deleted))}"
    }

    /// The event as one human line: `seq 12  +1000 ~3 -0  PullRequest:1000 User:3  (job 4, w1)`.
    public var textLine: String {
        var perEntity: [String: Int] = [:]
        for id in inserted + updated + deleted { perEntity[id.entity, default: 0] += 1 }
        let entities = perEntity.keys.sorted().map { "\($0):\(perEntity[$0]!)" }.joined(separator: " ")
        return
            "seq \(seq)  +\(inserted.count) ~\(updated.count) -\(deleted.count)  \(entities)  (job \(origin.jobID), \(origin.workerID))"
    }
}
