/// A misuse of a context or an object: an unknown entity or property, a value of the wrong type.
public struct ContextError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable {
        case unknownEntity, unknownProperty, wrongType, missingRequiredValue, noUniqueness, waitCycle, noParent
        /// The context's parent cannot answer a fetch, or cannot take a save (a view context's).
        case unsupported
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
