import Foundation
import TributaryCore
import TributaryMessaging
import TributaryProtocol
import ZeroMQ

/// What a message from a peer passes before it is routed: decoding into envelopes, authorization by the peer's
/// CURVE role, the capabilities it requires, and a save's bounds. Each check names what it refuses.
struct Intake {
    /// A message as decoded.
    enum Decoded {
        /// Its sender and envelopes, each decoded or the error that refused it alone (one of a batch).
        case envelopes(peer: Data, [Result<SizedEnvelope, ProtocolError>])
        /// Its frames do not make a message (its sender is told).
        case malformed(peer: Data, any Error)
        /// No frame at all (a ROUTER always gives the sender's routing id first): nobody to answer.
        case empty
    }

    /// With CURVE: who may send what (the ZAP handler that admits peers is ``PeerAdmission``'s).
    let authorization: PeerAuthorization?
    let limits: CoordinatorLimits
    /// With CURVE: the key each peer last sent with, to drop it when the key is revoked.
    private var peerKeys: [Data: String] = [:]

    init(authorization: PeerAuthorization?, limits: CoordinatorLimits) {
        self.authorization = authorization
        self.limits = limits
    }

    /// Splits a received message into its sender and envelopes.
    static func decode(_ message: SocketLoop.Inbound) -> Decoded {
        let frames = message.frames
        // A ROUTER always gives the sender's routing id first.
        guard let routingID = frames.first else { return .empty }
        do {
            return .envelopes(peer: routingID, try Wire.decodeEach(frames.dropFirst(), discardingUnknownFields: true))
        } catch {
            return .malformed(peer: routingID, error)
        }
    }

    /// Refuses an envelope its peer's role may not send (or from a peer whose key was revoked), or one that requires
    /// a capability this coordinator lacks.
    /// - Throws: ``ProtocolError`` `FORBIDDEN` naming the role and the message; `UNSUPPORTED` naming the capabilities.
    mutating func admit(_ envelope: Tributary_V1_Envelope, userID: String?, peer: Data) throws {
        if let authorization, let body = envelope.body {
            guard let role = authorization.role(of: userID) else {
                throw ProtocolError(.forbidden, "this peer's key is not in the allow-list (it was revoked)")
            }
            peerKeys[peer] = userID
            if let allowed = PeerAuthorization.roles(for: body), !allowed.contains(role) {
                throw ProtocolError(
                    .forbidden,
                    "a \(role.rawValue) key may not send \(CoordinatorServer.name(of: body)) (allowed: "
                        + allowed.map(\.rawValue).sorted().joined(separator: ", ") + ")")
            }
        }
        let missing = Set(envelope.requires).subtracting(CoordinatorServer.capabilityNames)
        guard missing.isEmpty else {
            throw ProtocolError.unsupported(
                missing: Array(missing), coordinatorVersion: ProtocolVersion.current,
                coordinatorCapabilities: CoordinatorServer.capabilityNames, peerVersion: ProtocolVersion.of(envelope))
        }
    }

    /// Reads the allow-list again: new keys are admitted from their next connection.
    /// - Returns: the peers that sent with a key no longer allowed (forgotten here); nil without CURVE.
    /// - Throws: ``KeyFileError`` for an unreadable allow-list (the previous one stays).
    mutating func reloadAllowList(from directory: String) throws -> (keys: Int, revoked: [Data])? {
        guard let authorization else { return nil }
        authorization.replace(try AllowList.load(directory: directory))
        var revoked: [Data] = []
        for (peer, key) in peerKeys where authorization.role(of: key) == nil {
            peerKeys[peer] = nil
            revoked.append(peer)
        }
        return (authorization.count, revoked)
    }

    /// A save as the writer takes it, once within the change-set limits and with fields that fit the store.
    /// - Throws: ``ProtocolError`` `TOO_LARGE` naming the limit and its flag; `INVALID_REQUEST` naming the field.
    func checkSave(_ save: Tributary_V1_SaveChanges, messageBytes: Int) throws -> SaveRequest {
        guard messageBytes <= limits.maximumChangeSetBytes else {
            throw ProtocolError(
                .tooLarge,
                "the save takes \(messageBytes) bytes; the limit is \(limits.maximumChangeSetBytes) (--max-change-set-mb)",
                jobID: save.jobID)
        }
        var rows = 0
        for batch in save.changes.batches { rows += batch.ids.count / 16 }
        guard rows <= limits.maximumChangeSetRows else {
            throw ProtocolError(
                .tooLarge,
                "the change set has \(rows) rows; the limit is \(limits.maximumChangeSetRows) (--max-change-set-rows)",
                jobID: save.jobID)
        }
        try Self.requireInt64(save.jobID, "job_id")
        try Self.requireProgress(save.progressDone, "progress_done")
        if !save.saveID.isEmpty {
            guard save.saveID.count == 16 else {
                throw ProtocolError(.invalidRequest, "save_id has \(save.saveID.count) bytes; it must have 16")
            }
            guard save.jobID == 0 else {
                throw ProtocolError(
                    .invalidRequest,
                    "a save with a save_id belongs to no job (job_id must be 0, not \(save.jobID)): a job's saves are "
                        + "made once by their lease and batch index",
                    jobID: save.jobID)
            }
            guard
                !save.completesJob && save.credit == 0 && save.progressDone == 0 && save.attempt == 0
                    && save.batchIndex == 0
            else {
                throw ProtocolError(
                    .invalidRequest,
                    "a save with a save_id belongs to no job: it has no attempt, batch index, progress, completion or credit"
                )
            }
        }
        var request = SaveRequest(save)
        if save.hasBatchChange { request.batchChange = try checkBatchChange(save) }
        return request
    }

    /// What the writer cannot judge without the store: the shape of a batch change. Its limit is brought within
    /// the change-set row limit (``BatchChangeExpansion/maximumObjects`` at most).
    private func checkBatchChange(_ save: Tributary_V1_SaveChanges) throws -> Tributary_V1_BatchChange {
        var change = save.batchChange
        guard save.changes.batches.isEmpty else {
            throw ProtocolError(
                .invalidRequest, "a save carries a change set or a batch change, not both", jobID: save.jobID)
        }
        guard save.jobID != 0 || !save.saveID.isEmpty else {
            throw ProtocolError(
                .invalidRequest,
                "a batch change belongs to a job (job_id) or carries a save_id, so that a retry is not applied twice")
        }
        guard change.afterID.isEmpty || change.afterID.count == 16 else {
            throw ProtocolError(
                .invalidRequest, "the batch change's after_id has \(change.afterID.count) bytes; it must have 16")
        }
        switch change.operation {
        case .update:
            guard !change.values.isEmpty else {
                throw ProtocolError(.invalidRequest, "a batch update of '\(change.entity)' sets no values")
            }
        case .delete:
            guard change.values.isEmpty else {
                throw ProtocolError(.invalidRequest, "a batch delete of '\(change.entity)' sets values")
            }
        case .insert, .unspecified, .UNRECOGNIZED:
            throw ProtocolError(
                .invalidRequest, "a batch change's operation is UPDATE or DELETE, not \(change.operation)")
        }
        change.limit = UInt32(
            BatchChangeExpansion.objectsPerCommit(
                change, maximumRows: limits.maximumChangeSetRows, maximumBytes: limits.maximumChangeSetBytes))
        return change
    }

    /// Values stored as SQLite integers must fit `Int64`; a larger one is refused rather than trapping.
    static func requireInt64(_ value: UInt64, _ field: String) throws {
        guard value <= UInt64(Int64.max) else {
            throw ProtocolError(.invalidRequest, "\(field) \(value) is larger than \(Int64.max)")
        }
    }

    /// Progress units (a job's `total`, a save's `progress_done`) are summed per batch, so each is kept to 2^53.
    static let maximumProgress: UInt64 = 1 << 53

    static func requireProgress(_ value: UInt64, _ field: String) throws {
        guard value <= maximumProgress else {
            throw ProtocolError(.invalidRequest, "\(field) \(value) is larger than \(maximumProgress)")
        }
    }
}
