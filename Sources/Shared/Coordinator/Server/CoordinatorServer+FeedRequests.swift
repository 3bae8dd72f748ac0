import Foundation
import TributaryCore
import TributaryProtocol

/// The feed's requests on the ROUTER: history pages, snapshots and durable subscribers. History and snapshot
/// pages are read on reader connections off the actor, so a subscriber catching up never delays a commit.
extension CoordinatorServer {
    /// Most commits a history page may ask for.
    static let maximumHistoryCommits: UInt32 = 10_000
    /// Rows per snapshot page when the request does not say, and the most it may ask for.
    static let defaultSnapshotRows: UInt32 = 10_000
    static let maximumSnapshotRows: UInt32 = 100_000
    /// Snapshots open at once; each holds a read transaction (and so keeps the WAL from being checkpointed).
    static let maximumOpenSnapshots = 16

    func history(_ request: Tributary_V1_HistoryRequest, from peer: Data, requestID: UInt64) throws {
        try Self.requireInt64(request.afterSeq, "after_seq")
        try Self.requireInt64(request.untilSeq, "until_seq")
        guard request.maxCommits <= Self.maximumHistoryCommits else {
            throw ProtocolError(
                .invalidRequest, "max_commits \(request.maxCommits) is over the limit of \(Self.maximumHistoryCommits)")
        }
        var query = RootStore.HistoryQuery(after: request.afterSeq)
        query.until = request.untilSeq
        query.filter = try feedFilter(entities: request.entities, attributes: request.attributes)
        if request.maxCommits > 0 { query.maxCommits = Int(request.maxCommits) }
        let store = self.store
        try serveOffActor(peer: peer, requestID: requestID) { [query] in .historyReply(try await store.history(query)) }
    }

    func snapshot(_ request: Tributary_V1_SnapshotRequest, from peer: Data, requestID: UInt64) throws {
        guard request.maxRows <= Self.maximumSnapshotRows else {
            throw ProtocolError(
                .invalidRequest, "max_rows \(request.maxRows) is over the limit of \(Self.maximumSnapshotRows)")
        }
        let rows = Int(request.maxRows == 0 ? Self.defaultSnapshotRows : request.maxRows)
        let snapshotID: UInt64
        let snapshot: StoreSnapshot
        try requireReadCapacity(for: peer)
        if request.snapshotID == 0 {
            guard openSnapshots.count < Self.maximumOpenSnapshots else {
                throw ProtocolError(
                    .invalidRequest,
                    "\(openSnapshots.count) snapshots are open, the most allowed; finish one or retry in a minute")
            }
            snapshot = try store.makeSnapshot(entities: Set(request.entities))
            nextSnapshotID += 1
            snapshotID = nextSnapshotID
        } else {
            guard let open = openSnapshots[request.snapshotID] else {
                throw ProtocolError(
                    .unknownSnapshot,
                    "snapshot \(request.snapshotID) is not open (it was finished, or released after 60 s unused)")
            }
            snapshotID = request.snapshotID
            snapshot = open.snapshot
        }
        openSnapshots[snapshotID] = (snapshot, .now)
        try serveOffActor(peer: peer, requestID: requestID) {
            let page = try await snapshot.nextPage(maxRows: rows)
            if page.done { await self.releaseSnapshot(snapshotID) }
            return .snapshotPage(
                Tributary_V1_SnapshotPage.with {
                    $0.snapshotID = snapshotID
                    $0.seq = page.seq
                    $0.objects = page.objects
                    $0.done = page.done
                })
        }
    }

    func releaseSnapshot(_ id: UInt64) {
        openSnapshots[id] = nil
    }

    /// Releases snapshots nobody asked a page of for a minute.
    func releaseIdleSnapshots() {
        let cutoff = ContinuousClock.now - .seconds(60)
        for (id, open) in openSnapshots where open.lastUsed < cutoff {
            openSnapshots[id] = nil
            logger.info("idle snapshot released", metadata: ["snapshot": "\(id)"])
        }
    }

    func subscriberUpdate(_ update: Tributary_V1_SubscriberUpdate, from peer: Data, requestID: UInt64) async throws {
        try Self.requireSubscriberName(update.name)
        try Self.requireInt64(update.position, "position")
        let info = try await store.updateSubscriber(
            name: update.name, position: update.position, registerOnly: update.registerOnly)
        reply(to: peer, requestID: requestID, .subscriberInfo(info))
    }

    func listSubscribers(from peer: Data, requestID: UInt64) async throws {
        let subscribers = try await store.subscribers()
        reply(to: peer, requestID: requestID, .subscribersReply(.with { $0.subscribers = subscribers }))
    }

    func deleteSubscriber(_ request: Tributary_V1_DeleteSubscriberRequest, from peer: Data, requestID: UInt64)
        async throws
    {
        try Self.requireSubscriberName(request.name)
        reply(to: peer, requestID: requestID, .subscriberInfo(try await store.deleteSubscriber(name: request.name)))
    }

    /// Prunes history by the configured age and count, a chunk at a time.
    /// - Returns: whether a full chunk was pruned, so more may be due at once.
    func pruneHistory() async -> Bool {
        guard configuration.historyRetention != nil || configuration.historyMaximumCommits != nil else { return false }
        let limit = 2_000
        do {
            let pruned = try await store.pruneHistory(
                before: configuration.historyRetention.map { Date() - $0.seconds },
                keepingNewest: configuration.historyMaximumCommits, limit: limit)
            if pruned > 0 { logger.debug("history pruned", metadata: ["commits": "\(pruned)"]) }
            return pruned == limit
        } catch {
            logger.error("cannot prune history", metadata: ["error": "\(error)"])
            return false
        }
    }

    private func feedFilter(entities: [String], attributes: [String]) throws -> FeedFilter {
        let model = configuration.model
        for name in entities where model.entity(named: name) == nil {
            let known = model.entities.map(\.name).joined(separator: ", ")
            throw ProtocolError(.unknownEntity, "unknown entity '\(name)' (the model has \(known))")
        }
        let selected = entities.isEmpty ? model.entities : entities.compactMap { model.entity(named: $0) }
        for name in attributes
        where !selected.contains(where: { $0.attribute(named: name) != nil || $0.relationship(named: name) != nil }) {
            throw ProtocolError(
                .unknownAttribute, "no subscribed entity has an attribute or relationship named '\(name)'")
        }
        return FeedFilter(entities: Set(entities), attributes: Set(attributes))
    }

    private static func requireSubscriberName(_ name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 200 else {
            throw ProtocolError(.invalidRequest, "a durable subscriber needs a name of 1 to 200 bytes")
        }
    }

    /// Runs `work` off the actor and answers `peer` with its result, or with the error it threw.
    /// Answers a read on a reader connection, off the actor, so it never delays a commit; at most
    /// `maximumPendingRequestsPerPeer` of one peer's reads are in flight.
    /// - Throws: ``ProtocolError`` `TOO_MANY_REQUESTS` naming the limit when the peer is at it.
    func serveOffActor(
        peer: Data, requestID: UInt64,
        _ work: @escaping @Sendable () async throws -> Tributary_V1_Envelope.OneOf_Body
    ) throws {
        try requireReadCapacity(for: peer)
        pendingReads[peer, default: 0] += 1
        // Detached: off the actor. `work` awaits its reads (GRDB's reader queues, ``BlockingWork``), so no thread
        // of the cooperative pool blocks on SQLite.
        Task.detached { [self] in
            do {
                reply(to: peer, requestID: requestID, try await work())
            } catch let error as ProtocolError {
                reply(to: peer, requestID: requestID, .error(error.wire))
            } catch let error as StoreError {
                reply(to: peer, requestID: requestID, .error(ProtocolError(error).wire))
            } catch {
                logger.error("read failed", metadata: ["error": "\(error)"])
                reply(to: peer, requestID: requestID, .error(ProtocolError(.internal, "\(error)").wire))
            }
            await readFinished(peer)
        }
    }

    /// Refuses a read from a peer that has as many in flight as it may.
    func requireReadCapacity(for peer: Data) throws {
        let limit = configuration.limits.maximumPendingRequestsPerPeer
        guard pendingReads[peer, default: 0] < limit else {
            throw ProtocolError(
                .tooManyRequests,
                "\(limit) of this peer's reads are in flight, the limit (--max-pending-requests); wait for their answers"
            )
        }
    }

    private func readFinished(_ peer: Data) {
        let left = pendingReads[peer, default: 1] - 1
        pendingReads[peer] = left > 0 ? left : nil
    }

    /// Refuses a save whose change set is over the row or byte limit, naming it.
    func checkChangeSetLimits(_ save: Tributary_V1_SaveChanges, messageBytes: Int) throws {
        let limits = configuration.limits
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
    }
}
