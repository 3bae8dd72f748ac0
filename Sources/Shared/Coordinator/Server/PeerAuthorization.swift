import Foundation
import Synchronization
import TributaryMessaging
import TributaryProtocol
import ZeroMQ

/// Who may connect, and what each may send, when the coordinator runs with CURVE: the allow-list decides ZAP
/// requests (a peer with an unknown key never gets in) and each message's `User-Id` (the peer's public key) gives
/// its role. The coordinator's own key counts as a worker's, for its local pool.
final class PeerAuthorization: Sendable {
    private let allowList: Mutex<AllowList>
    private let ownKey: String

    init(allowList: AllowList, ownKey: String) {
        self.allowList = Mutex(allowList)
        self.ownKey = ownKey
    }

    /// The ZAP answer about a connecting peer.
    func decide(_ request: ZAPHandler.Request) -> ZAPHandler.Decision {
        guard request.mechanism == "CURVE", let key = request.credentials.first.flatMap(CurveKeyPair.z85) else {
            WriterMetrics.peersRefused.increment()
            return .deny(reason: "this coordinator takes CURVE peers only")
        }
        guard role(of: key) != nil else {
            WriterMetrics.peersRefused.increment()
            return .deny(reason: "the key is not in the allow-list")
        }
        return .allow(userID: key)
    }

    /// The role of the peer with `key` now; nil when the key is not (or no longer) allowed.
    func role(of key: String?) -> CurveKeyFile.Role? {
        guard let key else { return nil }
        if key == ownKey { return .worker }
        return allowList.withLock { $0.entries[key]?.role }
    }

    /// How logs name the peer with `key`.
    func name(of key: String?) -> String {
        guard let key else { return "a peer without a key" }
        if key == ownKey { return "the coordinator's own pool" }
        return allowList.withLock { $0.entries[key]?.name } ?? "key \(key.prefix(8))…"
    }

    var count: Int { allowList.withLock { $0.entries.count } }

    func replace(_ list: AllowList) {
        allowList.withLock { $0 = list }
    }

    /// The roles that may send `body`; nil when any peer may (messages the coordinator refuses anyway).
    static func roles(for body: Tributary_V1_Envelope.OneOf_Body) -> Set<CurveKeyFile.Role>? {
        switch body {
        case .workerHello, .workerReady, .heartbeat, .jobFailed, .workerBye: [.worker]
        // A client's contexts save outside jobs (a job's saves need a worker's lease besides).
        case .saveChanges: [.worker, .client]
        case .pushJobs, .batchStatusRequest, .jobsRequest, .jobRequest, .retryJobRequest, .cancelJobRequest,
            .deleteJobRequest, .deleteSubscriberRequest, .putScheduleRequest, .schedulesRequest, .scheduleActionRequest,
            .backupRequest, .queueActionRequest:
            [.client]
        case .statusRequest, .historyRequest, .snapshotRequest, .subscriberUpdate, .subscribersRequest:
            [.client, .subscriber]
        case .fetchRequest, .aggregateRequest, .versionRequest, .modelRequest: [.worker, .client, .subscriber]
        case .welcome, .jobAssignment, .saveAck, .cancelJob, .drain, .pushReply, .statusReply, .batchStatusReply,
            .jobsReply, .jobInfo, .historyReply, .snapshotPage, .subscriberInfo, .subscribersReply, .fetchReply,
            .aggregateReply,
            .scheduleInfo, .schedulesReply, .backupReply, .versionReply, .modelReply, .queueInfo,
            .error:
            nil
        }
    }
}
