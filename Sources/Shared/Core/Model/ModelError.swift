/// Why a model file could not be used: unreadable, malformed, invalid, or incompatible with an existing store.
public struct ModelError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of problem it is, for callers that react differently to each.
    public enum Code: String, Sendable {
        /// The model file cannot be read.
        case unreadable
        /// The file is not a model's JSON: a key is missing or holds the wrong type.
        case malformed
        /// An attribute names a type that is not an ``AttributeType``.
        case unknownType
        /// A name is not an identifier, or is reserved by the store.
        case invalidName
        /// An entity, or a property of one entity, is declared twice (names compare ignoring case).
        case duplicateName
        /// A relationship's destination, or an entity asked for by name, is not in the model.
        case unknownDestination
        /// A uniqueness constraint is empty or names something other than an attribute of its entity.
        case invalidUniqueness
        /// An index is empty, too long, repeated, or names something other than an attribute or a to-one relationship
        /// of its entity.
        case invalidIndex
        /// The model has no entities.
        case empty
        /// The model cannot open an existing store: a change other than an additive one.
        case incompatible
    }

    /// What kind of problem it is.
    public let code: Code
    /// A sentence naming the problem and where it is.
    public let message: String

    /// An error of `code` described by `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "invalid model: \(message)" }
}
