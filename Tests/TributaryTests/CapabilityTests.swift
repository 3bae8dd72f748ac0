import Foundation
import Testing

@testable import TributaryCore
@testable import TributaryProtocol

/// What each message needs from the coordinator, and how versions are read and announced.
@Suite("Protocol capabilities: what a message needs")
struct CapabilityTests {
    static func push(_ specs: [Tributary_V1_JobSpec], onComplete: Tributary_V1_JobSpec? = nil)
        -> Tributary_V1_Envelope.OneOf_Body
    {
        .pushJobs(
            .with {
                $0.jobs = specs
                if let onComplete { $0.onComplete = onComplete }
            })
    }

    static func fetch(_ format: String) throws -> Tributary_V1_Envelope.OneOf_Body {
        let predicate = try FetchPredicate(format: format, "Jose")
        return .fetchRequest(.with { $0.predicate = predicate.wire })
    }

    @Test("a message names in `requires` only the capabilities whose fields it sets")
    func neededByBody() throws {
        let cases: [(Tributary_V1_Envelope.OneOf_Body, Set<Capability>)] = [
            (.workerHello(.with { $0.queues = [] }), []),
            (.workerHello(.with { $0.queues = ["default"] }), []),
            (.workerHello(.with { $0.queues = ["imports", "default"] }), [.queues]),
            (.workerHello(.with { ($0.queues, $0.queueWeights) = (["imports", "default"], [3, 1]) }), [.queues]),
            (Self.push([.with { $0.kind = "noop" }]), []),
            (Self.push([.with { $0.queue = "default" }]), []),
            (Self.push([.with { $0.queue = "imports" }]), [.queues]),
            (Self.push([.with { $0.kind = "a" }, .with { $0.afterPushed = [0] }]), [.dependencies]),
            (Self.push([.with { $0.afterJobs = [1] }]), [.dependencies]),
            (Self.push([.with { $0.afterBatches = ["b"] }]), [.dependencies]),
            (Self.push([.with { $0.kind = "a" }], onComplete: .with { $0.kind = "done" }), [.batchCallbacks]),
            (Self.push([], onComplete: .with { $0.queue = "imports" }), [.batchCallbacks, .queues]),
            (.putScheduleRequest(.with { $0.schedule.job.queue = "nightly" }), [.queues]),
            (try Self.fetch("login == %@"), []),
            (try Self.fetch("login ==[c] %@"), [.predicateOptions]),
            (try Self.fetch("login ==[d] %@"), [.predicateOptions]),
            (try Self.fetch("NOT (name == nil OR (login BEGINSWITH[cd] %@ AND name != nil))"), [.predicateOptions]),
            (.fetchRequest(.with { $0.entity = "User" }), []),
            (.historyRequest(.with { $0.entities = ["User"] }), []),
            (.historyRequest(.with { $0.afterEpoch = 9 }), [.feedEpochs]),
            (.subscriberUpdate(.with { $0.position = 4 }), []),
            (.subscriberUpdate(.with { $0.epoch = 9 }), [.feedEpochs]),
            (.snapshotRequest(.init()), []),
            (.statusRequest(.init()), []),
            (.saveChanges(.with { $0.jobID = 3 }), []),
            (.saveChanges(.with { $0.saveID = Data(repeating: 7, count: 16) }), [.contextSaves]),
            (
                .saveChanges(
                    .with {
                        $0.saveID = Data(repeating: 7, count: 16)
                        $0.batchChange = .with { $0.entity = "User" }
                    }), [.contextSaves, .batchChanges]
            ),
        ]
        for (body, expected) in cases {
            #expect(Capability.needed(by: body) == expected, "\(body)")
        }
    }

    @Test("every envelope this build makes announces version 2 and lists what it requires by name, sorted")
    func envelopeAnnounces() throws {
        let envelope = Wire.envelope(5, .statusRequest(.init()), requires: [.queues, .batchCallbacks])
        #expect(envelope.protocolVersion == ProtocolVersion.current && ProtocolVersion.current == 2)
        #expect(envelope.requires == ["batch-callbacks", "queues"])
        #expect(ProtocolVersion.of(Tributary_V1_Envelope()) == 1, "an envelope without a version is version 1's")
        #expect(
            Capability.names(Capability.supported) == [
                "batch-callbacks", "batch-changes", "context-saves", "dependencies", "feed-epochs", "predicate-options",
                "queues",
            ])
    }

    @Test("the refusal names the capability and both versions")
    func refusalText() {
        let old = ProtocolError.unsupported(
            missing: ["queues"], coordinatorVersion: 1, coordinatorCapabilities: [], peerVersion: 2)
        #expect(old.code == .unsupported && old.codeName == "UNSUPPORTED")
        #expect(
            old.message.hasPrefix(
                "this request needs capability 'queues'; the coordinator speaks protocol 1, which announces no "
                    + "capabilities; this peer speaks protocol 2"), "\(old.message)")
        let newer = ProtocolError.unsupported(
            missing: ["time-travel", "teleport"], coordinatorVersion: 2, coordinatorCapabilities: ["queues"],
            peerVersion: 3)
        #expect(
            newer.message.hasPrefix(
                "this request needs capabilities 'teleport', 'time-travel'; the coordinator speaks protocol 2, with "
                    + "queues; this peer speaks protocol 3"), "\(newer.message)")
    }
}
