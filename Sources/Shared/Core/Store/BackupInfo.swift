import TributaryProtocol

/// A backup the coordinator wrote of its store (`JobClient/backup(to:timeout:)`, `tributary backup`).
public struct BackupInfo: Sendable, Equatable {
    /// The backup's absolute path on the coordinator's host.
    public var path: String
    /// Its size.
    public var bytes: UInt64
    /// The last commit it holds: a coordinator started on it resumes the feed after this one.
    public var lastSeq: UInt64
    /// How long the copy took.
    public var seconds: Double

    /// A written backup.
    public init(path: String, bytes: UInt64, lastSeq: UInt64, seconds: Double) {
        self.path = path
        self.bytes = bytes
        self.lastSeq = lastSeq
        self.seconds = seconds
    }
}

extension BackupInfo {
    /// The backup a `BackupReply` carries.
    public init(_ wire: Tributary_V1_BackupReply) {
        self.init(path: wire.path, bytes: wire.bytes, lastSeq: wire.lastSeq, seconds: wire.seconds)
    }

    /// As `BackupReply` carries it.
    public var wire: Tributary_V1_BackupReply {
        Tributary_V1_BackupReply.with {
            $0.path = path
            $0.bytes = bytes
            $0.lastSeq = lastSeq
            $0.seconds = seconds
        }
    }
}
