import Foundation
import TributaryProtocol

/// An object a save changed after reading it, which another save changed or deleted in the meantime (Core Data's
/// `NSMergeConflict`). The root reports these when the saving context's merge policy is ``MergePolicy/error``.
public struct MergeConflict: Sendable, Hashable, CustomStringConvertible {
    /// One property the refused save sets, with the store's value and the save's.
    public struct Property: Sendable, Hashable {
        /// The attribute or relationship name.
        public let name: String
        /// The store's value now (to-one relationships: the destination's id as `.uuid`; nil: NULL, or a to-many
        /// relationship).
        public let stored: AttributeValue?
        /// The value the save would have written.
        public let yours: AttributeValue?

        package init(name: String, stored: AttributeValue?, yours: AttributeValue?) {
            self.name = name
            self.stored = stored
            self.yours = yours
        }
    }

    /// The object.
    public let objectID: ObjectID
    /// The version the saving context read.
    public let readVersion: UInt64
    /// The store's version now; 0 when the object was deleted from the store.
    public let storedVersion: UInt64
    /// The properties the save sets.
    public let properties: [Property]

    package init(objectID: ObjectID, readVersion: UInt64, storedVersion: UInt64, properties: [Property]) {
        self.objectID = objectID
        self.readVersion = readVersion
        self.storedVersion = storedVersion
        self.properties = properties
    }

    public var description: String {
        guard storedVersion != 0 else {
            return "\(objectID) was deleted in the store after it was read (version \(readVersion))"
        }
        let changes = properties.map { property in
            "\(property.name): stored \(Self.text(property.stored)), yours \(Self.text(property.yours))"
        }
        return "\(objectID) changed in the store (version \(readVersion) read, \(storedVersion) stored)"
            + (changes.isEmpty ? "" : ": " + changes.joined(separator: "; "))
    }

    private static func text(_ value: AttributeValue?) -> String {
        guard let value else { return "nil" }
        if case .string(let string) = value { return "\"\(string)\"" }
        return value.description
    }
}

/// A save refused because objects it changed were changed in the store since the context read them and the
/// context's merge policy is ``MergePolicy/error``. Nothing of the save was applied; the context keeps its
/// changes (refresh the objects, or choose another merge policy, and save again).
public struct MergeConflictError: Error, Sendable, CustomStringConvertible {
    /// Every conflicting object of the save.
    public let conflicts: [MergeConflict]

    package init(conflicts: [MergeConflict]) {
        self.conflicts = conflicts
    }

    public var description: String {
        "the save conflicts with \(conflicts.count) object(s) changed in the store since they were read: "
            + conflicts.prefix(10).map(\.description).joined(separator: " | ")
            + (conflicts.count > 10 ? " | …" : "")
    }
}

/// How the root resolves a save's changes to objects that changed in the store since the saving context read
/// them (Core Data's merge policies). Chosen per context, so per job.
public enum MergePolicy: Sendable, Hashable, CaseIterable {
    /// Refuse the whole save with a ``MergeConflictError`` listing the conflicts (`NSErrorMergePolicy`, the
    /// default, as in Core Data).
    case error
    /// Per property: the context's changes win; properties it did not change keep the store's values
    /// (`NSMergeByPropertyObjectTrumpMergePolicy`).
    case objectTrump
    /// Per property: where the store changed a property since it was read, the store's value wins; the context's
    /// other changes apply (`NSMergeByPropertyStoreTrumpMergePolicy`).
    case storeTrump
    /// The object as the context holds it replaces the stored one, every property (`NSOverwriteMergePolicy`).
    case overwrite
    /// Conflicting objects keep their stored values and the context's changes to them are dropped; the rest of
    /// the save applies (`NSRollbackMergePolicy`).
    case rollback

    package var wire: Tributary_V1_MergePolicy {
        switch self {
        case .error: .error
        case .objectTrump: .objectTrump
        case .storeTrump: .storeTrump
        case .overwrite: .overwrite
        case .rollback: .rollback
        }
    }

    package init(wire: Tributary_V1_MergePolicy) throws {
        switch wire {
        case .error: self = .error
        case .objectTrump: self = .objectTrump
        case .storeTrump: self = .storeTrump
        case .overwrite: self = .overwrite
        case .rollback: self = .rollback
        case .UNRECOGNIZED(let value):
            throw StoreError(.wrongType, "merge policy \(value) is not one this root knows")
        }
    }
}

extension MergeConflict {
    package var wire: Tributary_V1_Conflict {
        Tributary_V1_Conflict.with {
            $0.entity = objectID.entity
            $0.id = objectID.uuid.bytes
            $0.readVersion = readVersion
            $0.storedVersion = storedVersion
            $0.properties = properties.map { property in
                Tributary_V1_PropertyConflict.with {
                    $0.name = property.name
                    $0.stored = Tributary_V1_Value(property.stored)
                    $0.yours = Tributary_V1_Value(property.yours)
                }
            }
        }
    }

    package init(wire: Tributary_V1_Conflict) {
        let uuid =
            wire.id.count == 16
            ? UUID(bytes: wire.id, at: wire.id.startIndex)
            : UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        self.init(
            objectID: ObjectID(entity: wire.entity, uuid: uuid), readVersion: wire.readVersion,
            storedVersion: wire.storedVersion,
            properties: wire.properties.map {
                Property(name: $0.name, stored: $0.stored.attributeValue, yours: $0.yours.attributeValue)
            })
    }
}
