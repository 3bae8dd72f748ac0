import CPowerLoss
import Foundation
import GRDB
import GRDBSQLite
import Testing
import ZeroMQ

@testable import TributaryClient
@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

extension PowerLossTests {
    /// The commit pipeline against a disk that stalls: the store's syncs held in the VFS of Sources/CPowerLoss while
    /// a coordinator serves in this process. The router runs no commit and waits for none, so it answers what needs no
    /// new commit while the writer waits in its sync; the saves behind the sync are acknowledged only once it ends.
    @Suite("A store whose syncs stall: the router answers on")
    struct SyncStallTests {
        /// How long the store's syncs are held.
        static let hold: Duration = .seconds(2)
        /// The longest the router may take to answer meanwhile.
        static let answerLimit: Duration = .milliseconds(50)

        @Test(
            "while the store's sync is held for 2 s, heartbeats, version requests and a status read of committed data are each answered within 50 ms; the saves handed over meanwhile are acknowledged only after the sync, and are in the store"
        )
        func routerAnswersWhileTheSyncIsHeld() async throws {
            try await Self.withCoordinator { server, storePath in try await routerAnswers(server, storePath) }
        }

        private func routerAnswers(_ server: CoordinatorServer, _ storePath: String) async throws {
            let connection = try CoordinatorConnection(endpoint: server.listenEndpoint)
            let before = try await Self.saveUser("before", connection: connection)
            let zmq = try ZMQContext()
            defer { zmq.terminate() }
            // Heartbeats every 100 ms: silent for 300 ms, it would be taken for dead.
            let worker = try RawWorker(context: zmq, endpoint: server.listenEndpoint)
            defer { worker.socket.close() }
            try worker.hello(heartbeatMs: 100)

            power_loss_hold_syncs(1)
            let held = ContinuousClock.now
            let acknowledged = Locked<[String: ContinuousClock.Instant]>([:])
            let logins = (1...3).map { "held-\($0)" }
            let saves = logins.map { login in
                Task {
                    _ = try await Self.saveUser(login, connection: connection)
                    acknowledged.withLock { $0[login] = .now }
                }
            }
            try await waitUntil("the writer to wait in a held sync") { power_loss_syncs_waiting() > 0 }

            var slowest: Duration = .zero
            var rounds = 0
            var requestID: UInt64 = 10
            while held.duration(to: .now) < Self.hold {
                requestID += 1
                let sent = ContinuousClock.now
                try worker.send(.heartbeat(.init()))
                try worker.send(.versionRequest(.init()), requestID: requestID)
                try worker.send(.statusRequest(.init()), requestID: requestID + 1_000_000)
                var answered: Set<UInt64> = []
                while answered.count < 2 {
                    let reply = try worker.receive()
                    switch reply.body {
                    case .versionReply: answered.insert(reply.requestID)
                    case .statusReply(let status):
                        #expect(status.lastSeq == before, "the status reads what is committed")
                        #expect(status.workers.contains { $0.name == "raw" }, "the worker's heartbeats were heard")
                        answered.insert(reply.requestID)
                    default: Issue.record("unexpected reply \(reply)")
                    }
                }
                #expect(answered == [requestID, requestID + 1_000_000])
                slowest = max(slowest, sent.duration(to: .now))
                rounds += 1
            }
            #expect(power_loss_syncs_waiting() > 0, "the sync was held throughout")
            #expect(acknowledged.value.isEmpty, "no save acknowledged while its commit waits for the sync")
            #expect(rounds > 10)
            #expect(slowest <= Self.answerLimit, "the slowest answer took \(slowest) over \(rounds) rounds")

            let released = ContinuousClock.now
            power_loss_hold_syncs(0)
            for save in saves { try await save.value }
            for (login, at) in acknowledged.value {
                #expect(at > released, "\(login) acknowledged before the sync it waited for")
            }
            let stored = try await DatabaseQueue(path: storePath).read { db in
                try String.fetchAll(db, sql: "SELECT login FROM User WHERE login LIKE 'held-%' ORDER BY login")
            }
            #expect(stored == logins)
            await connection.close()
        }

        @Test(
            "a client's write refused for want of a place among its peer's requests in flight is not written: 16 fetches wait behind a held save, a subscriber's update is refused TOO_MANY_REQUESTS, and after the sync the store has no such subscriber"
        )
        func refusedWriteIsNotWritten() async throws {
            try await Self.withCoordinator { server, storePath in try await refusedWrite(server, storePath) }
        }

        private func refusedWrite(_ server: CoordinatorServer, _ storePath: String) async throws {
            let connection = try CoordinatorConnection(endpoint: server.listenEndpoint)
            _ = try await Self.saveUser("before", connection: connection)
            let zmq = try ZMQContext()
            defer { zmq.terminate() }
            let peer = try RawWorker(context: zmq, endpoint: server.listenEndpoint)
            defer { peer.socket.close() }

            power_loss_hold_syncs(1)
            let held = Task { try await Self.saveUser("held", connection: connection) }
            try await waitUntil("the writer to wait in a held sync") { power_loss_syncs_waiting() > 0 }
            // Each fetch reads after the held save, so each keeps its place until the sync ends.
            let limit = CoordinatorLimits().maximumPendingRequestsPerPeer
            for requestID in 1...UInt64(limit) {
                try peer.send(.fetchRequest(.with { $0.entity = "User" }), requestID: requestID)
            }
            let update = Tributary_V1_SubscriberUpdate.with {
                $0.name = "refused"
                $0.position = 0
            }
            try peer.send(.subscriberUpdate(update), requestID: 100)
            let refusal = try peer.receive()
            #expect(refusal.requestID == 100)
            guard case .error(let error) = refusal.body else {
                Issue.record("the update was answered with \(refusal) while its peer's places were taken")
                return
            }
            #expect(error.code == .tooManyRequests, "\(error)")

            power_loss_hold_syncs(0)
            _ = try await held.value
            var fetched: Set<UInt64> = []
            while fetched.count < limit {
                let reply = try peer.receive()
                guard case .fetchReply = reply.body else {
                    Issue.record("unexpected reply \(reply)")
                    return
                }
                fetched.insert(reply.requestID)
            }
            // Once the peer's places are free, the same update is written: it was refused for its place alone.
            try peer.send(.subscriberUpdate(.with { $0.name = "accepted" }), requestID: 101)
            guard case .subscriberInfo = try peer.receive().body else {
                Issue.record("the update with places free was not answered with the subscriber")
                return
            }
            let stored = try await DatabaseQueue(path: storePath).read { db in
                try String.fetchAll(db, sql: "SELECT name FROM tributary_subscribers ORDER BY name")
            }
            #expect(stored == ["accepted"], "the refused update was written anyway")
            await connection.close()
        }

        /// Runs `body` with a coordinator serving in this process, its store in a directory the power-loss VFS
        /// watches (so its syncs can be held); lets the syncs go and stops the coordinator after.
        static func withCoordinator(
            _ body: (_ server: CoordinatorServer, _ storePath: String) async throws -> Void
        ) async throws {
            #expect(power_loss_register() == SQLITE_OK)
            let directory = try TemporaryDirectory()
            power_loss_watch(directory.url.path)
            defer {
                power_loss_hold_syncs(0)
                power_loss_watch(nil)
            }
            let storePath = directory.path("store.sqlite")
            let (servers, ready) = AsyncStream<CoordinatorServer>.makeStream()
            let serving = Task { try await serve(storePath: storePath, model: DemoData.model) { ready.yield($0) } }
            defer { serving.cancel() }
            var iterator = servers.makeAsyncIterator()
            let server = try #require(await iterator.next())
            try await body(server, storePath)
        }

        /// Inserts a user in a context of its own over `connection` and saves it; returns the commit's seq.
        static func saveUser(_ login: String, connection: CoordinatorConnection) async throws -> UInt64 {
            let context = ObjectContext(model: DemoData.model, parent: CoordinatorStore(connection: connection))
            try await context.perform { context in
                try context.insert("User")["login"] = .string(login)
            }
            return try await context.save().seq
        }
    }
}
