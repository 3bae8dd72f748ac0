import Foundation

/// The JSON of the coordinator's other answers, written by the same encoder as jobs, so that the CLI's `--json` and
/// the HTTP API print the same fields.
extension JobJSON {
    /// The coordinator's status: `{"workers": […], "jobs": {…}, "lastSeq": 12, …}`.
    public static func text(_ status: CoordinatorStatus) throws -> String {
        String(decoding: try encoder.encode(status), as: UTF8.self)
    }

    /// A batch: `{"batch": "nightly", "totalJobs": 3, …, "dead": […]}`.
    public static func text(_ batch: BatchStatus) throws -> String {
        String(decoding: try encoder.encode(batch), as: UTF8.self)
    }

    /// Durable subscribers: `{"subscribers": [{…}, …]}`.
    public static func text(_ subscribers: [DurableSubscriber]) throws -> String {
        String(decoding: try encoder.encode(["subscribers": subscribers]), as: UTF8.self)
    }

    /// A push: `{"batch": "nightly", "jobIds": [12, 13], "duplicates": []}`.
    public static func text(_ pushed: PushedBatch) throws -> String {
        String(decoding: try encoder.encode(pushed), as: UTF8.self)
    }
}
