import TributaryCore
import TributaryProtocol

/// An error that retrying cannot fix (bad input, an unknown entity, a value of the wrong type): a job that fails
/// with one is dead at once instead of retrying for hours. Conform your own handlers' input errors to it.
public protocol PermanentJobError: Error {}

extension ImportError: PermanentJobError {}
extension ContextError: PermanentJobError {}
extension ModelError: PermanentJobError {}
extension FetchPredicateError: PermanentJobError {}

/// Classifies job errors for the worker.
enum JobErrors {
    static func isPermanent(_ error: any Error) -> Bool {
        if error is any PermanentJobError { return true }
        if let error = error as? ProtocolError {
            // The root refused the change set itself: sending it again gives the same answer.
            return [.unknownEntity, .unknownAttribute, .wrongType, .constraintViolation, .invalidPredicate, .tooLarge]
                .contains(
                    error.code)
        }
        return false
    }
}
