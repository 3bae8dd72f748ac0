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

    /// Reads a UUID from 16 bytes at `offset` of `data`.
    @inlinable
    public init(bytes data: Data, at offset: Int) {
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { target in
            data.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + 16]))
            }
        }
        self.init(uuid: value)
    }

    /// Appends the UUID's 16 bytes to `data` without an intermediate allocation.
    @inlinable
    public func append(to data: inout Data) {
        withUnsafeBytes(of: uuid) { data.append(contentsOf: $0) }
    }
}
