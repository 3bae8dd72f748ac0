import Foundation
import TributaryCore

/// One line of a `push jobs` file as decoded, each field checked for its type and range: an unknown field or a value
/// of the wrong kind is a ``JobSpecLines/Problem`` naming the field.
struct JobSpecFields: Decodable {
    /// The names a job spec's JSON uses (``/TributaryCore/JobSpec``'s `Encodable` form).
    static let names: [String] = [
        "kind", "payload", "arguments", "total", "maxAttempts", "backoffBaseMs", "backoffCapMs", "priority", "runAt",
        "uniqueKey", "timeoutMs", "queue", "afterJobs", "afterBatches", "afterPushed", "onParentFailure",
    ]

    var kind: String?
    var payload: String?
    var arguments: [String: String]?
    var total: UInt64?
    var maxAttempts: UInt32?
    var backoffBaseMs: UInt32?
    var backoffCapMs: UInt32?
    var priority: Int32?
    var runAt: Double?
    var uniqueKey: String?
    var timeoutMs: UInt32?
    var queue: String?
    var afterJobs: [Int64]?
    var afterBatches: [String]?
    var afterPushed: [Int]?
    var onParentFailure: String?

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        for key in container.allKeys where !Self.names.contains(key.stringValue) {
            let camel = Self.camelCase(key.stringValue)
            let hint = Self.names.contains(camel) ? " (did you mean '\(camel)'?)" : ""
            throw JobSpecLines.Problem(
                "unknown field '\(key.stringValue)'\(hint); the fields are \(Self.names.joined(separator: ", "))")
        }
        func field<T: Decodable>(_ name: String, _ what: String) throws -> T? {
            let key = Key(stringValue: name)
            guard container.contains(key), try !container.decodeNil(forKey: key) else { return nil }
            do {
                return try container.decode(T.self, forKey: key)
            } catch {
                throw JobSpecLines.Problem("'\(name)' must be \(what)")
            }
        }
        let count = "a whole number from 0 to \(UInt32.max)"
        let milliseconds = "a whole number of milliseconds from 0 to \(UInt32.max)"
        kind = try field("kind", "a string: the job's kind")
        payload = try field("payload", "a string: the payload in base64")
        arguments = try field("arguments", "an object whose values are strings")
        total = try field("total", "a whole number from 0 to \(JobSpecLines.maximumTotal)")
        maxAttempts = try field("maxAttempts", count)
        backoffBaseMs = try field("backoffBaseMs", milliseconds)
        backoffCapMs = try field("backoffCapMs", milliseconds)
        priority = try field("priority", "a whole number from \(Int32.min) to \(Int32.max)")
        runAt = try field("runAt", "a number of seconds since 1970")
        uniqueKey = try field("uniqueKey", "a string")
        timeoutMs = try field("timeoutMs", milliseconds)
        queue = try field("queue", "a string: the queue's name")
        afterJobs = try field("afterJobs", "an array of job ids (whole numbers from 1)")
        afterBatches = try field("afterBatches", "an array of batch names")
        afterPushed = try field("afterPushed", "an array of positions of earlier jobs of the file (from 0)")
        onParentFailure = try field("onParentFailure", "a string: \(ParentFailure.names.joined(separator: ", "))")
    }

    /// The spec the fields make, each checked on its own.
    /// - Throws: ``JobSpecLines/Problem`` naming the field at fault.
    func spec() throws -> JobSpec {
        guard let kind else { throw JobSpecLines.Problem("no 'kind': each line needs the job's kind") }
        guard !kind.isEmpty else { throw JobSpecLines.Problem("'kind' must name a job kind") }
        var spec = JobSpec(kind: kind, queue: queue.flatMap { $0.isEmpty ? nil : $0 } ?? JobQueue.defaultName)
        if let payload {
            guard let data = Data(base64Encoded: payload) else {
                throw JobSpecLines.Problem("'payload' must be base64")
            }
            spec.payload = data
        }
        spec.arguments = arguments ?? [:]
        if spec.arguments.keys.contains("") { throw JobSpecLines.Problem("'arguments' has an empty key") }
        if let total {
            guard total <= JobSpecLines.maximumTotal else {
                throw JobSpecLines.Problem("'total' must be a whole number from 0 to \(JobSpecLines.maximumTotal)")
            }
            spec.total = total
        }
        spec.maxAttempts = maxAttempts ?? 0
        spec.backoffBase = .milliseconds(Int64(backoffBaseMs ?? 0))
        spec.backoffCap = .milliseconds(Int64(backoffCapMs ?? 0))
        spec.priority = priority ?? 0
        if let runAt, runAt != 0 {
            guard runAt.isFinite && runAt > 0 else {
                throw JobSpecLines.Problem("'runAt' must be a number of seconds since 1970 (0: at once)")
            }
            spec.runAt = Date(timeIntervalSince1970: runAt)
        }
        if let uniqueKey, !uniqueKey.isEmpty {
            guard uniqueKey.utf8.count <= 256 else {
                throw JobSpecLines.Problem("'uniqueKey' has \(uniqueKey.utf8.count) bytes; at most 256")
            }
            spec.uniqueKey = uniqueKey
        }
        if let timeoutMs, timeoutMs > 0 { spec.timeout = .milliseconds(Int64(timeoutMs)) }
        spec.afterJobs = afterJobs ?? []
        spec.afterBatches = afterBatches ?? []
        spec.afterPushed = afterPushed ?? []
        return spec
    }

    /// `unique_key` as `uniqueKey`.
    private static func camelCase(_ name: String) -> String {
        let words = name.split(separator: "_")
        guard let first = words.first else { return name }
        return String(first) + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}
