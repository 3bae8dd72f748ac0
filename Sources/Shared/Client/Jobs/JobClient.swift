import Foundation
import TributaryCore
import TributaryMessaging
import TributaryProtocol

/// Pushes jobs and asks the coordinator how they are doing, in the domain's types (``/TributaryCore/JobSpec``,
/// ``/TributaryCore/JobInfo``, ``/TributaryCore/BatchStatus``, ``/TributaryCore/CoordinatorStatus``,
/// ``/TributaryCore/ScheduleInfo``); the protocol's messages stay inside.
///
/// ```swift
/// let client = try JobClient(endpoint: "tcp://127.0.0.1:7400")
/// let pushed = try await client.push([ImportJob.spec(entity: "User", payload: rows, rows: 2)])
/// let status = try await client.waitForBatch(pushed.batch)
/// print(status.doneRows, "rows;", status.deadJobs, "dead jobs")
/// ```
public final class JobClient: Sendable {
    let connection: CoordinatorConnection

    /// Connects to the coordinator's jobs/control endpoint (with `curve` keys for a coordinator that runs with
    /// CURVE; nil takes them from the environment, else connects without).
    public init(endpoint: String, curve: CurveClientKeys? = nil) throws {
        connection = try CoordinatorConnection(endpoint: endpoint, curve: curve)
    }

    /// Runs `body` with a client connected to `endpoint`, and closes it afterwards, also when `body` throws.
    public static func with<T: Sendable>(
        endpoint: String, curve: CurveClientKeys? = nil, _ body: (JobClient) async throws -> T
    ) async throws -> T {
        let client = try JobClient(endpoint: endpoint, curve: curve)
        do {
            let value = try await body(client)
            await client.close()
            return value
        } catch {
            await client.close()
            throw error
        }
    }

    /// The endpoint this client talks to.
    public var endpoint: String { connection.endpoint }

    /// Workers, the local pool, jobs by state and those running, limits, queues, and where the store and its history
    /// stand.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` from the coordinator, or naming a worker state, job state or
    ///   limit this version does not know.
    public func status() async throws -> CoordinatorStatus {
        let reply = try await connection.request(.statusRequest(.init()))
        guard case .statusReply(let status) = reply.body else { throw Self.unexpected(reply) }
        return try CoordinatorStatus(status)
    }

    /// Has the coordinator write an online backup of its store to `path` on its host (relative to its backup
    /// directory, or absolute inside it); returns once the file is complete.
    /// - Throws: ``/TributaryProtocol/ProtocolError`` naming why the coordinator could not write it (the file exists,
    ///   the path is outside its backup directory, …).
    public func backup(to path: String, timeout: Duration = .seconds(600)) async throws -> BackupInfo {
        let reply = try await connection.request(.backupRequest(.with { $0.path = path }), timeout: timeout)
        guard case .backupReply(let backup) = reply.body else { throw Self.unexpected(reply) }
        return BackupInfo(backup)
    }

    /// Closes the connection, sending what is queued first.
    public func close() async {
        await connection.close()
    }

    static func unexpected(_ reply: Tributary_V1_Envelope) -> ProtocolError {
        ProtocolError(
            .unknownMessage, "unexpected reply from the coordinator: \(reply.body.map { "\($0)" } ?? "empty")")
    }
}
