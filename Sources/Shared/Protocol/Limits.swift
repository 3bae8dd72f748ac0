/// Size limits applied to what peers send.
public enum Limits {
    /// The largest message any socket accepts (`ZMQ_MAXMSGSIZE`); a peer sending more is disconnected.
    public static let maximumMessageBytes: Int64 = 64 << 20
    /// The largest job payload accepted by a push.
    public static let maximumPayloadBytes = 16 << 20
}
