import Foundation
import TributaryCore
import TributaryProtocol

/// What one commit publishes on the change feed, serialized once: a didSave part per entity it touched (also what
/// the history table keeps, as a `HistoryRecord`) and the `$commits` summary that follows them.
public struct CommitEvents: Sendable {
    /// The commit's store sequence number.
    public let seq: UInt64
    /// The store epoch of the run that committed it.
    public let epoch: UInt64
    /// One serialized `DidSave` per touched entity, in the order the entities were first touched.
    public let parts: [(entity: String, body: Data)]
    /// The serialized `CommitSummary`.
    public let summary: Data
    /// Objects the commit inserted, updated or deleted (those found by a key and left as they were not counted).
    public let objectsChanged: Int

    /// The history record: the parts as a serialized `HistoryRecord` (field 1, repeated), built from the bytes
    /// already serialized for the feed rather than by serializing the parts again.
    var record: Data {
        var record = Data(capacity: parts.reduce(0) { $0 + $1.body.count + 6 })
        for part in parts {
            record.append(0x0A)  // field 1, length-delimited
            var length = UInt64(part.body.count)
            while length >= 0x80 {
                record.append(UInt8(truncatingIfNeeded: length) | 0x80)
                length >>= 7
            }
            record.append(UInt8(length))
            record.append(part.body)
        }
        return record
    }

    /// Builds the events of commit `seq` from the change set as received and what the merge did to it.
    static func make(
        seq: UInt64, epoch: UInt64, at time: Double, origin: Tributary_V1_Origin, changeSet: Tributary_V1_ChangeSet,
        result: MergeResult, resolved: [Tributary_V1_EntityBatch] = [], model: Model
    ) throws -> CommitEvents {
        var parts: [(entity: String, body: Data)] = []
        var objects = 0
        for (name, changes) in result.entities where !changes.isEmpty {
            objects += (changes.inserted.count + changes.updated.count + changes.deleted.count) / 16
            var part = Tributary_V1_DidSave()
            part.seq = seq
            part.epoch = epoch
            part.committedAt = time
            part.origin = origin
            part.entity = name
            part.insertedIds = changes.inserted
            part.updatedIds = changes.updated
            part.deletedIds = changes.deleted
            part.values = values(of: name, in: changeSet, result: result, model: model)
            if !result.rewritten.isEmpty {
                part.values += resolved.filter { $0.entity == name }.map { $0.keepingRows(in: result.rewritten) }
                    .filter { !$0.ids.isEmpty }
            }
            parts.append((name, try part.serializedData()))
        }
        var summary = Tributary_V1_CommitSummary()
        summary.seq = seq
        summary.epoch = epoch
        summary.committedAt = time
        summary.origin = origin
        summary.entities = parts.map(\.entity)
        return CommitEvents(
            seq: seq, epoch: epoch, parts: parts, summary: try summary.serializedData(), objectsChanged: objects)
    }

    /// The insert and update batches of `entity` as they were applied: rows that changed nothing left out, ids
    /// and relationship targets replaced by the stored objects' ids where uniqueness merged them.
    private static func values(
        of entity: String, in changeSet: Tributary_V1_ChangeSet, result: MergeResult, model: Model
    ) -> [Tributary_V1_EntityBatch] {
        // Each relationship's destination, by name: a column is remapped only when its destination had remaps.
        let destinations = Dictionary(
            (model.entity(named: entity)?.relationships ?? []).map { ($0.name, $0.destination) },
            uniquingKeysWith: { first, _ in first })
        var values: [Tributary_V1_EntityBatch] = []
        for (position, batch) in changeSet.batches.enumerated()
        where batch.entity == entity && batch.operation != .delete {
            var batch = batch
            // What the context read is not news to subscribers.
            if !batch.versions.isEmpty { batch.versions = [] }
            if !batch.originals.isEmpty { batch.originals = [] }
            if let unchanged = result.unchangedRows[position] {
                guard unchanged.count < batch.ids.count / 16 else { continue }
                batch = batch.removingRows(Set(unchanged))
            }
            // Only ids of entities that had remaps can be remapped (the import's pull requests are new: their ids
            // are left as they are, their users' remapped).
            if !result.remapped.isEmpty {
                if result.remaps[entity] != nil { batch.ids = Self.remapping(batch.ids, result.remapped) }
                for index in batch.columns.indices {
                    guard let destination = destinations[batch.columns[index].name], result.remaps[destination] != nil
                    else { continue }
                    batch.columns[index].fixed16 = Self.remapping(batch.columns[index].fixed16, result.remapped)
                }
            }
            values.append(batch)
        }
        return values
    }

    /// `ids` (16 bytes each) with remapped ids replaced; the same bytes, uncopied, when none is.
    private static func remapping(_ ids: Data, _ remapped: [UUID: UUID]) -> Data {
        var result: Data?
        var offset = ids.startIndex
        while offset + 16 <= ids.endIndex {
            if let stored = remapped[UUID(bytes: ids, at: offset)] {
                if result == nil { result = ids }
                withUnsafeBytes(of: stored.uuid) { result!.replaceSubrange(offset..<offset + 16, with: $0) }
            }
            offset += 16
        }
        return result ?? ids
    }
}

extension Tributary_V1_EntityBatch {
    /// This batch with only the rows whose ids are in `kept`.
    func keepingRows(in kept: Set<UUID>) -> Tributary_V1_EntityBatch {
        let rows = ids.count / 16
        let removed = (0..<rows).filter { !kept.contains(UUID(bytes: ids, at: ids.startIndex + $0 * 16)) }
        var batch = removingRows(Set(removed))
        if !versions.isEmpty {
            batch.versions = (0..<rows).filter { !removed.contains($0) }.map { versions[$0] }
        }
        return batch
    }

    /// This batch without the given rows (every column, its nulls and, for to-many columns, their ids).
    func removingRows(_ removed: Set<Int>) -> Tributary_V1_EntityBatch {
        let rows = ids.count / 16
        let kept = (0..<rows).filter { !removed.contains($0) }
        var batch = self
        batch.ids = Self.fixed16(ids, rows: kept)
        batch.columns = columns.map { column in
            var column = column
            if !column.nulls.isEmpty {
                var nulls = NullBitmap(rows: kept.count)
                for (newRow, row) in kept.enumerated() where NullBitmap.isNull(column.nulls, row: row) {
                    nulls.set(newRow)
                }
                column.nulls = nulls.data
            }
            if !column.ints.isEmpty { column.ints = kept.map { column.ints[$0] } }
            if !column.doubles.isEmpty { column.doubles = kept.map { column.doubles[$0] } }
            if !column.strings.isEmpty { column.strings = kept.map { column.strings[$0] } }
            if !column.blobs.isEmpty { column.blobs = kept.map { column.blobs[$0] } }
            if !column.counts.isEmpty {
                var starts: [Int] = []
                var start = 0
                for count in column.counts {
                    starts.append(start)
                    start += Int(count)
                }
                var bytes = Data()
                for row in kept {
                    let from = column.fixed16.startIndex + starts[row] * 16
                    bytes.append(column.fixed16[from..<from + Int(column.counts[row]) * 16])
                }
                column.fixed16 = bytes
                column.counts = kept.map { column.counts[$0] }
            } else if !column.fixed16.isEmpty {
                column.fixed16 = Self.fixed16(column.fixed16, rows: kept)
            }
            return column
        }
        return batch
    }

    private static func fixed16(_ bytes: Data, rows: [Int]) -> Data {
        var result = Data(capacity: rows.count * 16)
        for row in rows {
            let from = bytes.startIndex + row * 16
            result.append(bytes[from..<from + 16])
        }
        return result
    }
}
