import Foundation

/// A batch's JSON (the HTTP API's `/api/batches/{batch}`): every field, under the protocol's names
/// (`BatchStatusReply` in docs/protocol.md), each dead job as `{"jobId", "message", "attempts"}`.
extension BatchStatus: Encodable {
    enum CodingKeys: String, CodingKey {
        case batch, totalJobs, doneJobs, deadJobs, cancelledJobs, totalRows, doneRows, dead
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(batch, forKey: .batch)
        try container.encode(totalJobs, forKey: .totalJobs)
        try container.encode(doneJobs, forKey: .doneJobs)
        try container.encode(deadJobs, forKey: .deadJobs)
        try container.encode(cancelledJobs, forKey: .cancelledJobs)
        try container.encode(totalRows, forKey: .totalRows)
        try container.encode(doneRows, forKey: .doneRows)
        try container.encode(dead, forKey: .dead)
    }
}

extension BatchStatus.DeadJob: Encodable {
    enum CodingKeys: String, CodingKey {
        case id = "jobId"
        case message, attempts
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(message, forKey: .message)
        try container.encode(attempts, forKey: .attempts)
    }
}

/// A push's JSON (`tributary push import --json`): `{"batch", "jobIds", "duplicates"}`.
extension PushedBatch: Encodable {
    enum CodingKeys: String, CodingKey {
        case batch
        case ids = "jobIds"
        case duplicates
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(batch, forKey: .batch)
        try container.encode(ids, forKey: .ids)
        try container.encode(duplicates, forKey: .duplicates)
    }
}
