/// Why a model file could not be used: unreadable, malformed, invalid, or incompatible with an existing store.
public struct ModelError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of problem it is, for callers that react differently to each.
    public enum Code: String, Sendable {
        case unreadable, malformed, unknownType, invalidName, duplicateName, unknownDestination
        case invalidUniqueness, empty, incompatible
    }

    public let code: Code
    /// A sentence naming the problem and where it is.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "invalid model: \(message)" }
}
