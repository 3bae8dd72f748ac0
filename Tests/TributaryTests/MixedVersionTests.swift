import Foundation
import Testing
import ZeroMQ

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryProtocol

/// Peers and coordinators of different protocol versions: a peer needing a capability the other side lacks is
/// refused, naming both versions and the capability, and never served wrongly; everyone else goes on being served.
@Suite("Integration: mixed protocol versions", .serialized)
struct MixedVersionTests {
    static let model = try! Model.decode(Data(DemoData.modelJSON.utf8))

    /// Whether `error` is the refusal of a request needing `capability`, naming both versions.
    static func isRefusal(
        _ error: ProtocolError, of capability: String, coordinator: UInt32, peer: UInt32
    ) -> Bool {
        error.code == .unsupported && error.message.contains("needs capability '\(capability)'")
            && error.message.contains("coordinator speaks protocol \(coordinator)")
            && error.message.contains("this peer speaks protocol \(peer)")
    }

    @Test(
        "a peer of a newer protocol needing a capability the coordinator lacks is refused; the next request is served")
    func newerPeerRefused() async throws {
        let directory = try TemporaryDirectory()
        let (_, stopped) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let context = try ZMQContext()
            defer { context.terminate() }
            let peer = try RawWorker(context: context, endpoint: coordinator.process.listenEndpoint)
            defer { peer.socket.close() }

            var future = Wire.envelope(1, .workerHello(.with { $0.jobKinds = ["noop"] }))
            future.protocolVersion = 3
            future.requires = ["queues", "time-travel"]
            try peer.socket.send(Wire.frames(future))
            let refused = try peer.receive()
            guard case .error(let wire) = refused.body else {
                Issue.record("the hello was served: \(refused)")
                return
            }
            let error = ProtocolError(wire)
            #expect(refused.requestID == 1 && refused.protocolVersion == 2)
            #expect(Self.isRefusal(error, of: "time-travel", coordinator: 2, peer: 3), "\(error)")
            #expect(
                error.message.contains(
                    "with batch-callbacks, batch-changes, context-saves, dependencies, feed-epochs, predicate-options, queues"
                ),
                "\(error)")

            try peer.send(.statusRequest(.init()), requestID: 2)
            let served = try peer.receive()
            guard case .statusReply(let status) = served.body else {
                Issue.record("status was not served: \(served)")
                return
            }
            #expect(served.requestID == 2 && served.protocolVersion == 2)
            #expect(status.workers.isEmpty, "the refused hello registered no worker")

            // What the coordinator has, asked for and required, is served.
            try peer.send(.versionRequest(.init()), requestID: 3)
            guard case .versionReply(let version) = try peer.receive().body else {
                Issue.record("no VersionReply")
                return
            }
            #expect(
                version.capabilities == [
                    "batch-callbacks", "batch-changes", "context-saves", "dependencies", "feed-epochs",
                    "predicate-options",
                    "queues",
                ])
            let hello = Wire.envelope(
                4, .workerHello(.with { ($0.jobKinds, $0.queues) = (["noop"], ["imports"]) }), requires: [.queues])
            try peer.socket.send(Wire.frames(hello))
            guard case .welcome(let welcome) = try peer.receive().body else {
                Issue.record("no Welcome")
                return
            }
            #expect(welcome.capabilities == version.capabilities)
        }
        #expect(stopped == 0)
    }

    @Test("a worker serving queues refuses a coordinator of version 1, naming both versions and 'queues', and exits")
    func workerRefusesOldCoordinator() async throws {
        try await OldCoordinator.with { old in
            let worker = try StartedProcess.start(
                "tributary-worker", ["--connect", old.endpoint, "--queues", "imports,default", "--heartbeat-ms", "200"])
            defer { worker.kill() }
            let refusal = try await worker.waitForError(containing: "UNSUPPORTED")
            #expect(refusal.contains("needs capability 'queues'"), "\(refusal)")
            #expect(refusal.contains("protocol 1") && refusal.contains("protocol 2"), "\(refusal)")
            #expect(try await worker.waitForExit() == 1)

            try await waitUntil("the worker's goodbye", timeout: .seconds(10)) {
                old.received { if case .workerBye = $0 { true } else { false } }
            }
            #expect(!old.received { if case .workerReady = $0 { true } else { false } }, "it asked for no job")
            let hello = try #require(old.received.first { if case .workerHello = $0.body { true } else { false } })
            #expect(hello.protocolVersion == 2 && hello.requires == ["queues"])
        }
    }

    @Test("a [d] fetch answered by a coordinator of version 1 is refused, not returned; a plain fetch is served")
    func fetchFromOldCoordinator() async throws {
        try await OldCoordinator.with { old in
            let connection = try CoordinatorConnection(endpoint: old.endpoint)
            let context = ObjectContext(model: Self.model, parent: CoordinatorStore(connection: connection))
            let folded = try FetchPredicate(format: "login ==[d] %@", "jose")
            let error = try await #require(throws: ProtocolError.self) {
                try await context.perform { try $0.fetch(FetchRequest(entity: "User", predicate: folded)).count }
            }
            #expect(Self.isRefusal(error, of: "predicate-options", coordinator: 1, peer: 2), "\(error)")
            let plain = try FetchPredicate(format: "login == %@", "jose")
            let found = try await context.perform {
                try $0.fetch(FetchRequest(entity: "User", predicate: plain)).count
            }
            #expect(found == 0)
            let fetches = old.received.filter { if case .fetchRequest = $0.body { true } else { false } }
            #expect(fetches.map(\.requires) == [["predicate-options"], []])
            await connection.close()
        }
    }

    @Test("a push with parents is not sent to a coordinator of version 1; a push needing nothing is")
    func pushToOldCoordinator() async throws {
        try await OldCoordinator.with { old in
            try await JobClient.with(endpoint: old.endpoint) { client in
                let error = try await #require(throws: ProtocolError.self) {
                    try await client.push([JobSpec(kind: "noop").with { $0.afterJobs = [1] }])
                }
                #expect(Self.isRefusal(error, of: "dependencies", coordinator: 1, peer: 2), "\(error)")
                #expect(!old.received { if case .pushJobs = $0 { true } else { false } }, "nothing was pushed")
                #expect(old.received { if case .versionRequest = $0 { true } else { false } })
                let pushed = try await client.push([JobSpec(kind: "noop")])
                #expect(pushed.ids == [1])
            }
        }
    }
}
