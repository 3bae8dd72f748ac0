import Foundation

/// The permanent identity of an object (Core Data's `NSManagedObjectID`): its entity and a 128-bit,
/// time-ordered id (UUIDv7) assigned at creation. There are no temporary ids.
public struct ObjectID: Sendable, Hashable, CustomStringConvertible {
    /// The entity's name.
    public let entity: String
    /// The 128-bit id, unique across all entities.
    public let uuid: UUID

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
    @inlinable
    public init(bytes data: Data, at index: Data.Index) {
        precondition(index >= data.startIndex && index + 16 <= data.endIndex, "16 bytes are needed for a UUID")
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { target in
            data[index..<index + 16].withUnsafeBytes { source in target.copyMemory(from: source) }
        }
        self.init(uuid: value)
    }

    /// Appends the UUID's 16 bytes to `data` without an intermediate allocation.
    @inlinable
    public func append(to data: inout Data) {
        withUnsafeBytes(of: uuid) { data.append(contentsOf: $0) }
    }
}
