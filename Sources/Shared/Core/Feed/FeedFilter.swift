import TributaryProtocol

/// Which didSave parts a subscriber wants: some entities (every entity when empty) and, optionally, only the parts
/// that set one of some attributes or relationships, or delete objects. The coordinator applies it to history
/// pages; `ChangeFeed` applies it to the live stream, so both deliver the same events.
public struct FeedFilter: Sendable, Hashable {
    /// The entities wanted; empty means every entity.
    public var entities: Set<String>
    /// Attribute or relationship names; when not empty, a part passes only if one of its value batches sets one
    /// of them, or it deletes objects.
    public var attributes: Set<String>

    /// A filter of `entities` (every entity when empty) and, when not empty, `attributes`.
    public init(entities: Set<String> = [], attributes: Set<String> = []) {
        self.entities = entities
        self.attributes = attributes
    }

    /// Whether parts of `entity` can pass.
    public func wants(entity: String) -> Bool {
        entities.isEmpty || entities.contains(entity)
    }

    /// Whether `part` passes.
    public func matches(_ part: Tributary_V1_DidSave) -> Bool {
        guard wants(entity: part.entity) else { return false }
        guard !attributes.isEmpty, part.deletedIds.isEmpty else { return true }
        return part.values.contains { batch in batch.columns.contains { attributes.contains($0.name) } }
    }
}
