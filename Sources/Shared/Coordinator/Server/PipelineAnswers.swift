/// What the router holds while it answers the writes the commit pipeline released: the replies of a group commit,
/// gathered to leave together, and what to do once each of its own writes is answered.
struct PipelineAnswers {
    /// Replies gathered while a group commit is answered, sent together once it is
    /// (``CoordinatorServer/answering(_:)``).
    var replies: ReplyPack?
    /// The router's own writes' follow-ups, by the write's position (``CoordinatorServer/write(_:then:)``).
    private var followUps: [UInt64: () -> Void] = [:]

    /// Runs `followUp` once the write at `position` is answered.
    mutating func follow(_ position: UInt64, with followUp: @escaping () -> Void) {
        followUps[position] = followUp
    }

    /// The follow-up of the write at `position`, taken; nil for a write the router did not queue.
    mutating func takeFollowUp(of position: UInt64) -> (() -> Void)? {
        followUps.removeValue(forKey: position)
    }
}
