import TributaryClient
import TributaryCore

/// The "triage" job kind: every open (unmerged) pull request with at least `min_additions` additions gets the
/// reviewer `reviewer` (a User found or created) and a score of additions / 100.
///
/// It shows the patterns a custom job is made of, with the entity types the TributaryEntities plugin writes from
/// demo.tributary.json at every build: a typed fetch, the fetch-then-create way of finding an object (which sees the context's
/// own unsaved insert), a to-many relationship, and a merge policy chosen for the job's context.
struct TriageHandler: JobHandler {
    let kind = "triage"

    /// The job's input was unusable: retrying cannot help, so the job is dead at once.
    struct InvalidArguments: PermanentJobError, CustomStringConvertible {
        let description: String
    }

    func run(_ job: JobRun) async throws {
        let arguments = job.spec.arguments
        guard let minimum = Int(arguments["min_additions"] ?? "500"), minimum >= 0 else {
            throw InvalidArguments(description: "min_additions must be a whole number ≥ 0")
        }
        let login = arguments["reviewer"] ?? "triage-bot"
        let context = job.makeContext(name: "triage-\(job.jobID)")
        // The generated types against the coordinator's model: a model changed since they were generated fails here.
        try PullRequest.check(against: context.model)
        try User.check(against: context.model)
        // This job sets reviewers and scores; if someone saved other properties of the same pull requests since
        // they were fetched, those stay (per property, the job's own changes win).
        context.mergePolicy = .objectTrump
        let triaged = try await context.perform { context in
            try triage(in: context, minimum: minimum, reviewerLogin: login)
        }
        try await job.complete(context, progress: UInt64(triaged))
    }

    /// Does the job's work in `context`; returns how many pull requests it looked at.
    func triage(in context: ObjectContext, minimum: Int, reviewerLogin login: String) throws -> Int {
        let reviewer = try findOrCreateUser(login: login, in: context)
        let pullRequests = try PullRequest.fetch(
            in: context, where: PullRequest.merged == false && PullRequest.additions >= minimum,
            sortedBy: [PullRequest.number.ascending])
        for pullRequest in pullRequests {
            if !pullRequest.reviewers.contains(where: { $0.objectID == reviewer.objectID }) {
                pullRequest.reviewers.append(reviewer)
            }
            pullRequest.score = Double(pullRequest.additions) / 100
        }
        return pullRequests.count
    }

    /// The articles' find-or-create: fetch by key, insert when missing. The fetch includes the context's unsaved
    /// objects, so asking twice in one job never makes two.
    func findOrCreateUser(login: String, in context: ObjectContext) throws -> User {
        if let existing = try User.fetch(in: context, where: User.login == login, limit: 1).first { return existing }
        let user = try User.insert(into: context)
        user.login = login
        user.name = "Triage bot"
        // The new user is not saved yet, and a fetch already finds it.
        guard try User.count(in: context, where: User.login == login) == 1 else {
            throw InvalidArguments(description: "a fetch did not see the unsaved user '\(login)'")
        }
        return user
    }
}
