import Foundation
import Testing
import ZeroMQ

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

    @Test(
        "a save answered UNKNOWN_WORKER waits for the copy sent once the worker registered anew; the error comes on messages"
    )
    func saveAnsweredUnknownWorker() async throws {
        let context = try ZMQContext()
        defer { context.terminate() }
        let router = try context.makeSocket(.router)
        defer { router.close() }
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        let connection = try CoordinatorConnection(endpoint: endpoint)
        let save = Tributary_V1_SaveChanges.with {
            $0.jobID = 7
            $0.attempt = 1
            $0.completesJob = true
        }
        let request = Task {
            try await connection.request(.saveChanges(save), timeout: .seconds(30), resendAs: .saveChanges(save))
        }
        /// The next request the router reads, and who sent it; waited for on a thread of its own, so that the
        /// connection's tasks run meanwhile on the cooperative pool (which other suites' tests may hold for seconds:
        /// the waits are deadlines, generous).
        let waiting = WaitingSocket(router)
        func receive(_ what: String) async throws -> (peer: Data, envelope: Tributary_V1_Envelope) {
            let frames = try await onOwnThread { () throws -> [Data]? in
                try waiting.socket.waitForInput(milliseconds: 60_000) ? try waiting.socket.receive() : nil
            }
            guard let frames else { throw TimedOut(what: what) }
            return (frames[0], try Wire.decode(frames.dropFirst()))
        }
        let first = try await receive("the save")
        let refusal = ProtocolError(.unknownWorker, "this peer has not registered as a worker")
        try router.send([first.peer] + Wire.frames(Wire.envelope(first.envelope.requestID, .error(refusal.wire))))
        let unsolicited = try #require(
            try await withTimeout("the error to come on messages", .seconds(60)) {
                await connection.messages.first { _ in true }
            })
        guard case .error(let error) = unsolicited.first?.body else {
            Issue.record("the error is passed on: \(unsolicited)")
            return
        }
        #expect(error.code == .unknownWorker)
        #expect(connection.pendingRequests == 1, "the save still waits")
        connection.resendPendingRequests()
        let again = try await receive("the save sent again")
        #expect(again.envelope.requestID == first.envelope.requestID && again.envelope.saveChanges == save)
        try router.send(
            [again.peer]
                + Wire.frames(Wire.envelope(again.envelope.requestID, .saveAck(.with { $0.jobID = 7 }))))
        let reply = try await withTimeout("the save's answer", .seconds(60)) { try await request.value }
        guard case .saveAck(let ack) = reply.body else {
            Issue.record("the save is answered by the copy sent again: \(reply)")
            return
        }
        #expect(ack.jobID == 7)
        await connection.close()
    }
}

/// A socket handed to the thread that waits on it: the test uses it only once that wait returned.
private final class WaitingSocket: @unchecked Sendable {
    let socket: ZMQSocket

    init(_ socket: ZMQSocket) {
        self.socket = socket
    }
}
