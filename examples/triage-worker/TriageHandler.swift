import TributaryClient
import TributaryCore

/// The "triage" job kind: every open (unmerged) pull request with at least `min_additions` additions gets the
/// reviewer `reviewer` (a User found or created) and a score of additions / 100.
///
/// It shows the patterns a custom job is made of: a fetch with a predicate parsed from a format string, the
/// fetch-then-create way of finding an object (which sees the context's own unsaved insert), to-many
/// relationships, and a merge policy chosen for the job's context.
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
        let request = FetchRequest(
            entity: "PullRequest",
            predicate: try FetchPredicate(format: "merged == NO AND additions >= %d", minimum),
            sortedBy: [FetchSort("number")])
        let pullRequests = try context.fetch(request)
        for pullRequest in pullRequests {
            let reviewers = try pullRequest.destinations("reviewers")
            if !reviewers.contains(reviewer.objectID) {
                try pullRequest.setDestinations(
                    try reviewers.map { try context.object(with: $0) } + [reviewer], for: "reviewers")
            }
            if case .int(let additions) = try pullRequest.value("additions") {
                try pullRequest.setValue(.double(Double(additions) / 100), for: "score")
            }
        }
        return pullRequests.count
    }

    /// The articles' find-or-create: fetch by key, insert when missing. The fetch includes the context's unsaved
    /// objects, so asking twice in one job never makes two.
    func findOrCreateUser(login: String, in context: ObjectContext) throws -> ManagedObject {
        let byLogin = FetchRequest(entity: "User", predicate: Key("login") == login, limit: 1)
        if let existing = try context.fetch(byLogin).first { return existing }
        let user = try context.insert("User")
        try user.setValue(.string(login), for: "login")
        try user.setValue(.string("Triage bot"), for: "name")
        // The new user is not saved yet, and a fetch already finds it.
        guard try context.count(for: byLogin) == 1 else {
            throw InvalidArguments(description: "a fetch did not see the unsaved user '\(login)'")
        }
        return user
    }
}
