import Foundation
import Testing

@testable import TributaryClient
@testable import TributaryProtocol

/// Requests of a connection whose coordinator never answers: they end when told to, not at their timeout.
@Suite("CoordinatorConnection: requests that stop waiting")
struct CoordinatorConnectionTests {
    /// A connection to a loopback port nothing listens on.
    static func unansweredConnection() throws -> CoordinatorConnection {
        let (port, _) = try ChaosTests.freePorts()
        return try CoordinatorConnection(endpoint: "tcp://127.0.0.1:\(port)")
    }

    @Test("a request made by a task that is already cancelled fails at once, not after its timeout")
    func requestAfterCancellation() async throws {
        let connection = try Self.unansweredConnection()
        let request = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await connection.request(.statusRequest(.init()), timeout: .seconds(60))
        }
        let result = try await withTimeout("the cancelled request to end", .seconds(10)) { await request.result }
        #expect(throws: CancellationError.self) { try result.get() }
        await connection.close()
    }

    @Test("abandoning requests fails the waiting ones and every later one with SHUTTING_DOWN")
    func abandonedRequests() async throws {
        let connection = try Self.unansweredConnection()
        let waiting = Task { try await connection.request(.statusRequest(.init()), timeout: .seconds(60)) }
        // Whether the request registered before or after this, it fails with the reason given.
        connection.abandonRequests("the worker is stopping")
        let result = try await withTimeout("the abandoned request to end", .seconds(10)) { await waiting.result }
        let error = try #require(throws: ProtocolError.self) { try result.get() }
        #expect(error.code == .shuttingDown && error.message.contains("the worker is stopping"))
        let later = try await #require(throws: ProtocolError.self) {
            try await connection.request(.statusRequest(.init()), timeout: .seconds(60))
        }
        #expect(later.code == .shuttingDown && later.message.contains("the worker is stopping"))
        await connection.close()
    }

    @Test("a request from a blocked thread fails at its timeout when nobody answers, naming the endpoint")
    func blockedRequestTimesOut() async throws {
        let connection = try Self.unansweredConnection()
        let started = ContinuousClock.now
        let result = try await withTimeout("the blocked request to time out", .seconds(10)) {
            try await onOwnThread {
                Result { try connection.requestBlocking(.statusRequest(.init()), timeout: .milliseconds(200)) }
            }
        }
        let error = try #require(throws: ProtocolError.self) { try result.get() }
        #expect(error.code == .internal && error.message.contains("no answer from the coordinator at tcp://127.0.0.1"))
        #expect(started.duration(to: .now) >= .milliseconds(200), "not before its timeout")
        await connection.close()
    }

    @Test("a request from a blocked thread with a timeout beyond a billion seconds waits until it is abandoned")
    func blockedRequestWithAHugeTimeout() async throws {
        let connection = try Self.unansweredConnection()
        let waiting = Task {
            try await onOwnThread {
                Result { try connection.requestBlocking(.statusRequest(.init()), timeout: .seconds(Int64.max / 2)) }
            }
        }
        try await waitUntil("the blocked request to register") { connection.pendingRequests == 1 }
        connection.abandonRequests("the test is over")
        let result = try await withTimeout("the abandoned request to end", .seconds(10)) { try await waiting.value }
        let error = try #require(throws: ProtocolError.self) { try result.get() }
        #expect(error.code == .shuttingDown && error.message.contains("the test is over"))
        await connection.close()
    }
}
