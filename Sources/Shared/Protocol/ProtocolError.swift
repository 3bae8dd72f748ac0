/// An error answered on the wire, or raised while decoding what a peer sent: a code from the protocol's
/// `ErrorCode` and a sentence naming the problem.
public struct ProtocolError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of error it is (``codeName`` spells it as the protocol does).
    public let code: Tributary_V1_ErrorCode
    /// A sentence naming the problem.
    public let message: String
    /// The job the error concerns; 0 for none.
    public let jobID: UInt64
    /// For `MERGE_CONFLICT`: the objects in conflict.
    public let conflicts: [Tributary_V1_Conflict]
    /// For `FEED_REWRITTEN`: the first sequence number whose commit may differ from the one the subscriber saw.
    public let seq: UInt64

    /// An error of `code` described by `message`, about job `jobID` (0: none).
    public init(
        _ code: Tributary_V1_ErrorCode, _ message: String, jobID: UInt64 = 0, conflicts: [Tributary_V1_Conflict] = [],
        seq: UInt64 = 0
    ) {
        self.code = code
        self.message = message
        self.jobID = jobID
        self.conflicts = conflicts
        self.seq = seq
    }

    /// The error as sent on the wire.
    public var wire: Tributary_V1_Error {
        Tributary_V1_Error.with {
            $0.code = code
            $0.message = message
            $0.jobID = jobID
            $0.conflicts = conflicts
            $0.seq = seq
        }
    }

    /// The error an `Error` message carries.
    public init(_ wire: Tributary_V1_Error) {
        self.init(wire.code, wire.message, jobID: wire.jobID, conflicts: wire.conflicts, seq: wire.seq)
    }

    /// The protocol's name for the code, e.g. `UNKNOWN_ENTITY`.
    public var codeName: String { Self.name(of: code) }

    public var description: String { "\(codeName): \(message)" }

    /// The code's name as docs/protocol.md and `.proto` spell it.
    public static func name(of code: Tributary_V1_ErrorCode) -> String {
        switch code {
        case .malformedFrame: "MALFORMED_FRAME"
        case .unknownMessage: "UNKNOWN_MESSAGE"
        case .unknownEntity: "UNKNOWN_ENTITY"
        case .unknownAttribute: "UNKNOWN_ATTRIBUTE"
        case .wrongType: "WRONG_TYPE"
        case .tooLarge: "TOO_LARGE"
        case .unknownWorker: "UNKNOWN_WORKER"
        case .unknownJob: "UNKNOWN_JOB"
        case .staleLease: "STALE_LEASE"
        case .constraintViolation: "CONSTRAINT_VIOLATION"
        case .invalidRequest: "INVALID_REQUEST"
        case .shuttingDown: "SHUTTING_DOWN"
        case .internal: "INTERNAL"
        case .jobCancelled: "JOB_CANCELLED"
        case .historyPruned: "HISTORY_PRUNED"
        case .unknownSnapshot: "UNKNOWN_SNAPSHOT"
        case .unknownSubscriber: "UNKNOWN_SUBSCRIBER"
        case .mergeConflict: "MERGE_CONFLICT"
        case .invalidPredicate: "INVALID_PREDICATE"
        case .tooManyRequests: "TOO_MANY_REQUESTS"
        case .forbidden: "FORBIDDEN"
        case .unsupported: "UNSUPPORTED"
        case .storeUnwritable: "STORE_UNWRITABLE"
        case .feedRewritten: "FEED_REWRITTEN"
        case .notPrimary: "NOT_PRIMARY"
        case .unspecified: "ERROR_CODE_UNSPECIFIED"
        case .UNRECOGNIZED(let value): "ERROR_CODE_\(value)"
        }
    }
}
