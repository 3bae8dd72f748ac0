import Foundation
import TributaryCore

/// The demo's model and a generator of pull-request rows whose authors and reviewers overlap, so that
/// find-or-create and uniqueness merges happen across jobs and workers.
public enum DemoData {
    /// The sample model: users and pull requests.
    public static let modelJSON = """
        {"entities": [
          {"name": "User", "attributes": [{"name": "login", "type": "string"},
                                           {"name": "name", "type": "string", "optional": true}],
           "uniqueness": [["login"]]},
          {"name": "PullRequest", "attributes": [{"name": "number", "type": "int"}, {"name": "title", "type": "string"},
             {"name": "merged", "type": "bool"}, {"name": "additions", "type": "int"},
             {"name": "score", "type": "double", "optional": true}, {"name": "createdAt", "type": "date"}],
           "relationships": [{"name": "author", "destination": "User"},
                             {"name": "reviewers", "destination": "User", "toMany": true}],
           "uniqueness": [["number"]]}]}
        """

    /// The model itself.
    public static var model: Model {
        // The literal above is a valid model; a failure here is a bug in this file.
        // swiftlint:disable:next force_try
        try! Model.decode(Data(modelJSON.utf8), source: "the demo model")
    }

    /// One generated pull request: the values an NDJSON row carries.
    public struct PullRequest: Sendable {
        public let number: Int
        public let title: String
        public let merged: Bool
        public let additions: Int
        public let score: Double?
        public let createdAt: Date
        /// Index of the author among the users (login `user<index>`).
        public let author: Int
        /// Indexes of the reviewers (may repeat).
        public let reviewers: [Int]
    }

    /// Pull requests `first..<first + count`, with authors and reviewers drawn from `users` users.
    /// The same arguments always give the same values.
    public static func pullRequestValues(count: Int, users: Int, startingAt first: Int = 1) -> [PullRequest] {
        var generator = SplitMix64(seed: 0x7472_6962)
        let base = 1_700_000_000
        return (first..<(first + count)).map { number in
            let author = Int(generator.next() % UInt64(users))
            let reviewerCount = Int(generator.next() % 4)
            let reviewers = (0..<reviewerCount).map { _ in Int(generator.next() % UInt64(users)) }
            let merged = generator.next() % 3 != 0
            let additions = Int(generator.next() % 2000)
            let score = generator.next() % 5 == 0 ? nil : Double(generator.next() % 1000) / 10
            return PullRequest(
                number: number, title: "Improve module \(number % 97) (#\(number))", merged: merged,
                additions: additions, score: score, createdAt: Date(timeIntervalSince1970: Double(base + number * 60)),
                author: author, reviewers: reviewers)
        }
    }

    /// NDJSON lines for pull requests `first..<first + count` (see ``pullRequestValues(count:users:startingAt:)``).
    public static func pullRequests(count: Int, users: Int, startingAt first: Int = 1) -> Data {
        var output = Data()
        output.reserveCapacity(count * 200)
        for pullRequest in pullRequestValues(count: count, users: users, startingAt: first) {
            let reviewers = pullRequest.reviewers.map { "{\"login\":\"user\($0)\"}" }.joined(separator: ",")
            let score = pullRequest.score.map { String($0) } ?? "null"
            let line =
                "{\"number\":\(pullRequest.number),\"title\":\"\(pullRequest.title)\",\"merged\":\(pullRequest.merged),"
                + "\"additions\":\(pullRequest.additions),\"score\":\(score),"
                + "\"createdAt\":\"\(pullRequest.createdAt.formatted(.iso8601))\","
                + "\"author\":{\"login\":\"user\(pullRequest.author)\"},\"reviewers\":[\(reviewers)]}\n"
            output.append(contentsOf: line.utf8)
        }
        return output
    }
}

/// A small, fast, seedable generator (SplitMix64) so demo data is reproducible.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
