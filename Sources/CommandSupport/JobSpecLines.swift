import Foundation
import TributaryCore
import TributaryProtocol

/// The job specs of `tributary push jobs`: one JSON object per line, under the names of a job spec's JSON
/// (`schedules list --json` prints them): `kind` (required), `arguments` (strings), `queue`, `priority`, `uniqueKey`,
/// `afterJobs`, `afterBatches`, `afterPushed` (positions from 0 of earlier jobs of the file), `onParentFailure`,
/// `runAt` (seconds since 1970), `maxAttempts`, `backoffBaseMs`, `backoffCapMs`, `timeoutMs`, `total` and `payload`
/// (base64). Absent, null, zero and empty values take the defaults; blank lines are skipped.
///
/// Every line is checked as `push job` checks its flags and as the coordinator checks a push, so that a file with a
/// bad line is refused, naming the line, before anything is sent.
public enum JobSpecLines {
    /// The most parents a job may name (the coordinator's limit; a batch counts as one).
    public static let maximumParents = 1_000
    /// The largest `total` (progress counts are kept exact in a double).
    public static let maximumTotal: UInt64 = 1 << 53

    /// The specs of `lines`, in order.
    /// - Parameters:
    ///   - source: what the lines are (a file's path), for the error.
    ///   - batch: the batch they will be pushed to, when named: no job may wait for it.
    /// - Throws: ``JobSpecLineError`` naming the first bad line (1-based, blank lines counted) and what is wrong.
    public static func specs(of lines: [Substring], source: String, batch: String? = nil) throws -> [JobSpec] {
        var specs: [JobSpec] = []
        for (index, rawLine) in lines.enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            do {
                specs.append(try spec(of: line, position: specs.count, batch: batch))
            } catch let problem as Problem {
                throw JobSpecLineError(source: source, line: index + 1, problem: problem.message)
            }
        }
        return specs
    }

    /// What is wrong with a line.
    struct Problem: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    private static func spec(of line: Substring, position: Int, batch: String?) throws -> JobSpec {
        let fields: JobSpecFields
        do {
            fields = try JSONDecoder().decode(JobSpecFields.self, from: Data(line.utf8))
        } catch let problem as Problem {
            throw problem
        } catch DecodingError.dataCorrupted {
            throw Problem("not valid JSON")
        } catch {
            throw Problem("not a JSON object (one job spec per line)")
        }
        var spec = try fields.spec()
        try check(&spec, fields: fields, position: position, batch: batch)
        return spec
    }

    /// The checks that need more than one field, or the line's place in the file.
    private static func check(_ spec: inout JobSpec, fields: JobSpecFields, position: Int, batch: String?) throws {
        if let refusal = JobQueue.refusal(of: spec.queue) { throw Problem("'queue': \(refusal)") }
        if spec.afterJobs.contains(where: { $0 < 1 }) {
            throw Problem("'afterJobs' must hold job ids (whole numbers from 1)")
        }
        if spec.afterBatches.contains("") { throw Problem("'afterBatches' must hold batch names, not empty ones") }
        if let batch, spec.afterBatches.contains(batch) {
            throw Problem("'afterBatches' names '\(batch)', the batch it is pushed to: a job cannot wait for its own")
        }
        if let bad = spec.afterPushed.first(where: { $0 < 0 || $0 >= position }) {
            throw Problem(
                "'afterPushed' names job \(bad) of the file; it may name earlier jobs only (positions from 0: this is "
                    + "job \(position))")
        }
        let parents = spec.afterJobs.count + spec.afterBatches.count + spec.afterPushed.count
        if parents > maximumParents {
            throw Problem("names \(parents) parents; at most \(maximumParents) (a batch counts as one)")
        }
        if let policy = fields.onParentFailure, !policy.isEmpty {
            guard let known = ParentFailure(rawValue: policy) else {
                throw Problem("'onParentFailure' must be one of \(ParentFailure.names.joined(separator: ", "))")
            }
            guard parents > 0 else {
                throw Problem("'onParentFailure' needs parents: 'afterJobs', 'afterBatches' or 'afterPushed'")
            }
            spec.onParentFailure = known
        }
        // One job must fit one message, with room for the rest of it.
        if spec.payload.count > Int(Limits.maximumMessageBytes) - (1 << 20) {
            throw Problem("'payload' has \(spec.payload.count) bytes: more than a message to the coordinator takes")
        }
    }
}

/// A line of a `push jobs` file that cannot be pushed: its number and what is wrong.
public struct JobSpecLineError: Error, CustomStringConvertible {
    /// What the lines are (a file's path).
    public let source: String
    /// The line, from 1, blank lines counted.
    public let line: Int
    /// What is wrong with it.
    public let problem: String

    public var description: String { "\(source), line \(line): \(problem)" }
}
