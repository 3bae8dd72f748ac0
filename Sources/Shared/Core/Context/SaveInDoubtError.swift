import Foundation

/// A save whose outcome is not known: it was sent, but no answer said whether it was committed (the parent did not
/// answer in time, or the connection closed while it waited).
///
/// The context keeps such a save as it was sent, with its id, and its next `save()` sends it again
/// before anything newer: a parent that committed it answers with its first answer, one that did not applies it
/// then. So it is applied once, whichever happened, and its changes are not mixed into a later change set under
/// another id (which could apply them a second time).
public struct SaveInDoubtError: Error, CustomStringConvertible, Sendable {
    /// The id the save was sent with, and is sent again with.
    public let saveID: UUID
    /// Why no answer came.
    public let reason: String

    /// How long after its first send a save in doubt is still sent again: within the 24 hours the coordinator keeps
    /// save ids. Later, the context drops it rather than risk applying it twice.
    public static let resendWindow: TimeInterval = 23 * 3600

    /// An in-doubt save sent as `saveID`, unanswered for `reason`.
    public init(saveID: UUID, reason: String) {
        self.saveID = saveID
        self.reason = reason
    }

    public var description: String {
        "the save \(saveID) may or may not have been committed (\(reason)); the context's next save() sends it again with the same id"
    }
}
