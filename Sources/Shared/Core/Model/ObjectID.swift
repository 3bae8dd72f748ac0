import Foundation

/// The permanent identity of an object (Core Data's `NSManagedObjectID`): its entity and a 128-bit,
/// time-ordered id (UUIDv7) assigned at creation. There are no temporary ids.
public struct ObjectID: Sendable, Hashable, CustomStringConvertible {
    /// The entity's name.
    public let entity: String
    /// The 128-bit id, unique across all entities.
    public let uuid: UUID

    /// The id `uuid` of an object of `entity`.
    public init(entity: String, uuid: UUID) {
        self.entity = entity
        self.uuid = uuid
    }

    /// A new id for an object of `entity`, ordered after every id this process made before.
    public static func make(entity: String) -> ObjectID {
        ObjectID(entity: entity, uuid: TimeOrderedUUID.next())
    }

    public var description: String { "\(entity)/\(uuid.uuidString.lowercased())" }
}

extension UUID {
    /// The 16 bytes of the UUID, as stored and sent on the wire.
    @inlinable
    public var bytes: Data {
        withUnsafeBytes(of: uuid) { Data($0) }
    }

    /// Reads a UUID from the 16 bytes of `data` starting at index `index` (an index of `data`, so slices work:
    /// pass `data.startIndex + offset`). The caller checks that 16 bytes are there.
    ///
    /// Read in place: slicing a large `Data` first makes a slice object per id, and the writer reads several ids
    /// per imported row.
    @inlinable
    public init(bytes data: Data, at index: Data.Index) {
        precondition(index >= data.startIndex && index + 16 <= data.endIndex, "16 bytes are needed for a UUID")
        let offset = index - data.startIndex
        self.init(uuid: data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: uuid_t.self) })
    }

    /// Appends the UUID's 16 bytes to `data` without an intermediate allocation.
    @inlinable
    public func append(to data: inout Data) {
        withUnsafeBytes(of: uuid) { data.append(contentsOf: $0) }
    }
}

extension Array where Element == UUID {
    /// Appends the ids' bytes (16 each, in order) to `data` in one copy.
    @inlinable
    public func append(to data: inout Data) {
        guard !isEmpty else { return }
        // A UUID is its 16 bytes, so the array's storage is the ids back to back.
        assert(MemoryLayout<UUID>.stride == 16)
        withUnsafeBytes { data.append(contentsOf: $0) }
    }
}
