/// A place in the change feed: a commit's sequence number and the store epoch it was committed in (see
/// ``DidSave/epoch``), written `SEQ:EPOCH` with the epoch in 16 hexadecimal digits (`1207:8f3a0c5d2e4b6a19`), or
/// `SEQ` alone when the epoch is not known (then a rewritten history is found only when the store has no such
/// commit).
public struct FeedPosition: Sendable, Hashable, CustomStringConvertible {
    /// The commit's sequence number.
    public var seq: UInt64
    /// Its epoch; 0 when not known.
    public var epoch: UInt64

    /// The position after commit `seq` of `epoch` (0: not known).
    public init(seq: UInt64, epoch: UInt64 = 0) {
        self.seq = seq
        self.epoch = epoch
    }

    /// Reads `SEQ` or `SEQ:EPOCH`; nil when the text is neither.
    public init?(_ text: some StringProtocol) {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(fields.count), let seq = UInt64(fields[0]) else { return nil }
        var epoch: UInt64 = 0
        if fields.count == 2 {
            guard fields[1].count == 16, let value = UInt64(fields[1], radix: 16) else { return nil }
            epoch = value
        }
        self.init(seq: seq, epoch: epoch)
    }

    public var description: String { epoch == 0 ? "\(seq)" : "\(seq):\(Self.hex(epoch))" }

    /// An epoch as 16 hexadecimal digits.
    public static func hex(_ epoch: UInt64) -> String {
        let digits = String(epoch, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
