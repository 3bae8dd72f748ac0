import TributaryProtocol

extension AppliedSave {
    /// The answer to the save, as the wire carries it (without its job id and batch index, which the sender's
    /// message gives): its seq, remaps, settled conflicts and batch selection, `duplicate` when it was applied before.
    /// Also the form in which a context's save is recorded with its id (``ContextSaveLog``).
    var ack: Tributary_V1_SaveAck {
        var ack = Tributary_V1_SaveAck()
        if let selection {
            ack.batchIds = selection.ids
            ack.batchMore = selection.more
        }
        switch outcome {
        case .committed(let seq, _, let remaps, let resolved):
            ack.seq = seq
            ack.remaps = remaps
            ack.resolved = resolved
        case .committedEmpty(let remaps, let resolved):
            ack.remaps = remaps
            ack.resolved = resolved
        case .duplicate(let seq):
            ack.seq = seq
            ack.duplicate = true
        case .answeredBefore(let seq, let remaps, let resolved):
            ack.seq = seq
            ack.remaps = remaps
            ack.resolved = resolved
            ack.duplicate = true
        }
        return ack
    }
}
