/// A misuse of a context or an object: an unknown entity or property, a value of the wrong type.
public struct ContextError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of misuse it is, for callers that react differently to each.
    public enum Code: String, Sendable {
        /// The model has no entity of that name.
        case unknownEntity
        /// The entity has no attribute or relationship of that name.
        case unknownProperty
        /// A value, object or relationship of another type than the property or the call expects.
        case wrongType
        /// A find-or-create key lacks a value its uniqueness constraint needs.
        case missingRequiredValue
        /// Find-or-create on an entity without a uniqueness constraint.
        case noUniqueness
        /// A `performAndWait` that would wait for a context that is waiting for this one: refused, not deadlocked.
        case waitCycle
        /// A save of a context that has no parent to save to.
        case noParent
        /// The context's parent cannot answer a fetch, or cannot take a save (a view context's).
        case unsupported
        /// A save inside a block waited longer than its parent's `blockedSaveLimit` for the context's save in
        /// flight: it gave the queue back, its changes still pending.
        case timedOut
    }

    /// What kind of misuse it is.
    public let code: Code
    /// A sentence naming the misuse: the entity, property or contexts involved.
    public let message: String

    /// An error of `code` described by `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
