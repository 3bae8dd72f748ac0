import GRDB
import TributaryCore

/// Job states in `tributary_jobs.state` (TEXT, the state's name).
extension JobState: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> JobState? {
        String.fromDatabaseValue(dbValue).flatMap(JobState.init(rawValue:))
    }

    /// The state as an SQL literal, for statements that name a state (`state = 'queued'`).
    var sql: String { "'\(rawValue)'" }

    /// The states of a job not finished yet (waiting, queued, running), as an SQL list: those a unique key holds.
    static let liveSQL = [JobState.waiting, .queued, .running].map(\.sql).joined(separator: ", ")
}
