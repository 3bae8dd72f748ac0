import Foundation
import TributaryClient
import TributaryCommandSupport
import TributaryCore
import TributaryDemo

/// The aggregate figures: a grouped count and sum over the import's store, computed by the coordinator's readers in
/// one query, with and without an index the model declares, against a view loading the entity and adding up in
/// Swift (what a client without aggregates does).
struct AggregateBenchmark {
    /// The pull requests per author: how many, and their additions (grouped by a to-one key path).
    static let request = AggregateRequest(
        entity: "PullRequest", groupBy: ["author.login"], aggregates: [.count(), .sum("additions")])

    /// The demo model with an index on the pull requests' author and additions: the grouped query reads the index
    /// instead of the table.
    static let indexedModelJSON = DemoData.modelJSON.replacingOccurrences(
        of: #""uniqueness": [["number"]]}]}"#,
        with: #""uniqueness": [["number"]], "indexes": [["author", "additions"]]}]}"#)

    /// The groups as `login: (count, sum)`, to check the ways agree.
    typealias Groups = [String: (count: Int64, sum: Int64)]

    /// Seconds per aggregate fetch (the median of `rounds` after one not counted) on the store in `folder`, its
    /// model declaring the index when `indexed` (created when the coordinator opens the store, dropped at the next
    /// open without it), and the groups.
    func fetch(store folder: URL, indexed: Bool, rounds: Int) async throws -> (seconds: Double, groups: Groups) {
        let coordinator = try await CoordinatorProcess.startDemoStore(
            in: folder, arguments: ["--log-level", "warning"],
            modelJSON: indexed ? Self.indexedModelJSON : DemoData.modelJSON
        ).process
        do {
            let client = try JobClient(endpoint: coordinator.listenEndpoint)
            var groups: Groups = [:]
            var times: [Double] = []
            for round in 0...rounds {
                let started = ContinuousClock.now
                let result = try await client.aggregate(Self.request, timeout: .seconds(600))
                if round > 0 { times.append((ContinuousClock.now - started).seconds) }
                groups = [:]
                for row in result.rows {
                    guard case .int(let count)? = row["count"], case .int(let sum)? = row["sum_additions"] else {
                        throw BaselineError("an aggregate row without its count or sum: \(row)")
                    }
                    groups[row["author.login"].map { "\($0)" } ?? "nil"] = (count, sum)
                }
            }
            await client.close()
            await coordinator.stop()
            return (BenchCommand.median(times), groups)
        } catch {
            await coordinator.stop()
            throw error
        }
    }

    /// Seconds for a view to load the pull requests and users and add them up in Swift (the median of `rounds`), and
    /// the groups.
    func inSwift(store folder: URL, rounds: Int) async throws -> (seconds: Double, groups: Groups) {
        let coordinator = try await CoordinatorProcess.startDemoStore(
            in: folder, arguments: ["--log-level", "warning"]
        )
        .process
        do {
            var groups: Groups = [:]
            var times: [Double] = []
            for _ in 0..<rounds {
                let started = ContinuousClock.now
                let view = try await ViewContext.start(
                    feed: coordinator.feedEndpoint, jobs: coordinator.listenEndpoint, model: DemoData.model,
                    entities: ["PullRequest", "User"])
                let added = try await view.context.perform { context -> [String: (count: Int64, sum: Int64)] in
                    var groups: [String: (count: Int64, sum: Int64)] = [:]
                    for object in context.registeredObjects where object.entity.name == "PullRequest" {
                        let login = try object.destination("author").flatMap { try context.object(with: $0)["login"] }
                        let additions: Int64 = if case .int(let value)? = object["additions"] { value } else { 0 }
                        let key = login.map { "\($0)" } ?? "nil"
                        groups[key, default: (0, 0)].count += 1
                        groups[key, default: (0, 0)].sum += additions
                    }
                    return groups
                }
                times.append((ContinuousClock.now - started).seconds)
                groups = added
                await view.close()
            }
            await coordinator.stop()
            return (BenchCommand.median(times), groups)
        } catch {
            await coordinator.stop()
            throw error
        }
    }

    /// Whether two ways gave the same groups.
    static func agree(_ lhs: Groups, _ rhs: Groups) -> Bool {
        lhs.count == rhs.count && lhs.allSatisfy { key, value in rhs[key].map { $0 == value } ?? false }
    }
}
