import Foundation
import TributaryCore
import TributaryProtocol
import ZeroMQ

/// The state machine behind ``ChangeFeed``: follows the live stream, checks each commit summary against the
/// position delivered so far, and fills gaps from history one page at a time (so memory stays bounded while
/// catching up), or from a snapshot when the history was pruned.
///
/// Invariant: every commit up to ``position`` was handed out (or filtered out) exactly once, in order; nothing at
/// or below it is handed out again.
///
/// It also keeps the epoch of the commit at ``position`` (0 until known). A live message of another epoch, or a
/// heartbeat showing the store behind the position or at it in another epoch, is checked through history (the
/// request carries the epoch) before anything more is delivered: a store whose history was rewritten under the
/// subscriber answers `FEED_REWRITTEN`, and the feed says so (then snapshots, with
/// ``ChangeFeed/Options/snapshotWhenPruned``) rather than read on.
final class FeedReader: @unchecked Sendable {
    // @unchecked: a feed is iterated by one task; `ChangeFeed` documents that, and nothing else touches this.

    private let options: ChangeFeed.Options
    private var inbound: InboundQueue.AsyncIterator
    private let client: JobClient

    /// Every commit up to here is in `ready` or was handed out; nil until the start point is known.
    private var position: UInt64?
    /// The epoch of commit `position`; 0 while not known.
    private var epoch: UInt64 = 0
    /// Events ready to hand out, oldest first.
    private var ready: [ChangeFeed.Event] = []
    private var readyStart = 0
    /// Live messages received but not looked at yet (held while a gap is filled).
    private var live: [[Data]] = []
    private var liveStart = 0
    /// The parts received for the commit whose summary has not come yet.
    private var parts: [Tributary_V1_DidSave] = []
    /// History to fetch: after `position` up to this seq (0 = the last commit).
    private var catchUpTarget: UInt64?
    /// A snapshot being paged through, and what to catch up to after it.
    private var snapshotID: UInt64?
    /// The last heartbeat showed the store behind the position, or holding it in another run: the store's history
    /// is checked against (position, epoch) once the live messages received are handled.
    private var checkPending = false
    /// The coordinator refused to store the durable position as one its history does not hold.
    private var refusedAcknowledgement: ProtocolError?
    private var started = false
    /// The last event handed out.
    private var lastHandedOut: FeedPosition?
    private var acknowledged: UInt64?
    private var lastAcknowledgement = ContinuousClock.now

    init(options: ChangeFeed.Options, inbound: InboundQueue, client: JobClient) {
        self.options = options
        self.inbound = inbound.makeAsyncIterator()
        self.client = client
    }

    /// Where a consumer that processed everything handed out would resume.
    var processedPosition: UInt64? { processed?.seq }

    /// ``processedPosition`` with its epoch.
    var processed: FeedPosition? {
        guard readyStart == ready.count else { return lastHandedOut }
        return position.map { FeedPosition(seq: $0, epoch: epoch) }
    }

    func next() async throws -> ChangeFeed.Event? {
        try await acknowledge(force: false)
        while true {
            if readyStart < ready.count {
                let event = ready[readyStart]
                readyStart += 1
                if readyStart == ready.count {
                    ready.removeAll(keepingCapacity: true)
                    readyStart = 0
                }
                if case .didSave(let save) = event { lastHandedOut = save.position }
                return event
            }
            if !started {
                try await start()
            } else if let refused = refusedAcknowledgement {
                refusedAcknowledgement = nil
                try cannotFollow(refused)
            } else if snapshotID != nil {
                try await loadSnapshotPage()
            } else if let target = catchUpTarget {
                try await loadHistoryPage(until: target)
            } else if liveStart < live.count {
                let frames = live[liveStart]
                liveStart += 1
                if liveStart == live.count {
                    live.removeAll(keepingCapacity: true)
                    liveStart = 0
                }
                accept(frames)
            } else if checkPending {
                try await checkHistory()
            } else {
                // Caught up and about to wait: the consumer processed every event handed out (it asked for the
                // next), so a pause stores the position rather than leaving a burst's tail unacknowledged. The
                // feed heartbeat (every 500 ms) wakes this loop, so an acknowledgement held back by the one-second
                // spacing is sent soon after. A failure is retried at the next chance.
                try? await acknowledge(force: false)
                guard let batch = await inbound.next() else {
                    if processed?.seq != acknowledged { try? await acknowledge(force: true) }
                    return nil
                }
                live.append(contentsOf: batch.map(\.frames))
            }
        }
    }

    /// Stores the durable position (when there is a durable name): when it moved, at most every second; with
    /// `force`, now, whether it moved or not (so the coordinator checks it against its history again).
    /// - Throws: with `force`, a ``ChangeFeedError`` carrying `FEED_REWRITTEN` when the coordinator refuses the
    ///   position as one its history does not hold (the feed also stops, or snapshots, at its next step).
    func acknowledge(force: Bool) async throws {
        guard let name = options.durableName, let processed else { return }
        guard force || (processed.seq != acknowledged && ContinuousClock.now - lastAcknowledgement >= .seconds(1))
        else { return }
        lastAcknowledgement = .now
        do {
            _ = try await client.updateSubscriber(name: name, position: processed.seq, epoch: processed.epoch)
        } catch let error as ProtocolError where error.code == .feedRewritten {
            // Not stored: what was processed is not the store's history.
            refusedAcknowledgement = error
            if force { throw ChangeFeedError(message: error.message, protocolError: error) }
            return
        }
        acknowledged = processed.seq
    }

    // MARK: - Start

    private func start() async throws {
        started = true
        var since = options.since
        // A given position is checked with the epoch it came with (by the registration of a durable name too); a
        // stored durable position is the store's own, and its epoch comes with the first history page.
        var sinceEpoch = options.sinceEpoch
        if let name = options.durableName {
            let registerOnly = since == nil
            let start: UInt64
            if let since { start = since } else { start = try await request { try await self.client.status().lastSeq } }
            let info = try await request {
                try await self.client.updateSubscriber(
                    name: name, position: start, epoch: registerOnly ? 0 : sinceEpoch, registerOnly: registerOnly)
            }
            if registerOnly { sinceEpoch = 0 }
            since = info.position
            acknowledged = info.position
        }
        if let since {
            position = since
            epoch = sinceEpoch
            catchUpTarget = 0
        }
    }

    // MARK: - Live stream

    private func accept(_ frames: [Data]) {
        guard frames.count == 2 else { return }
        let topic = String(decoding: frames[0], as: UTF8.self)
        switch topic {
        case Wire.heartbeatTopic:
            guard let heartbeat = try? Tributary_V1_FeedHeartbeat(serializedBytes: frames[1]) else { return }
            guard let position else {
                self.position = heartbeat.lastSeq
                epoch = heartbeat.epoch
                ready.append(.caughtUp(seq: heartbeat.lastSeq))
                return
            }
            // The heartbeat follows the messages of every commit it counts: one not seen was dropped.
            if heartbeat.lastSeq > position {
                catchUpTarget = heartbeat.lastSeq
                checkPending = false  // the history request checks
            } else {
                // The store is behind this position, or holds it in another run: check the history (a store read
                // ahead of the feed's publisher passes). The latest heartbeat decides: those buffered during a
                // catch-up are overtaken by the next.
                checkPending = heartbeat.lastSeq < position || (epoch != 0 && heartbeat.epoch != epoch)
            }
        case Wire.commitsTopic:
            guard let summary = try? Tributary_V1_CommitSummary(serializedBytes: frames[1]) else { return }
            commit(summary)
        case _ where topic.hasPrefix("$"):
            return  // `$jobs`, or a topic of a later protocol version: not didSave parts
        default:
            // ZeroMQ matches topic prefixes ("User" also gets "UserProfile"): keep exact matches only.
            guard options.filter.wants(entity: topic),
                let part = try? Tributary_V1_DidSave(serializedBytes: frames[1]), part.entity == topic
            else { return }
            if let position, part.seq <= position { return }
            // Parts of an earlier commit whose summary never came: that commit is filled from history.
            if let first = parts.first, first.seq != part.seq { parts.removeAll() }
            parts.append(part)
        }
    }

    private func commit(_ summary: Tributary_V1_CommitSummary) {
        let seq = summary.seq
        if position == nil {
            position = seq - 1
            ready.append(.caughtUp(seq: seq - 1))
        }
        guard let position, seq > position else { return }
        let received = parts.filter { $0.seq == seq }
        parts.removeAll()
        let expected = summary.entities.filter(options.filter.wants)
        guard seq == position + 1, Set(received.map(\.entity)) == Set(expected),
            epoch == 0 || summary.epoch == epoch
        else {
            // A gap before this commit, parts of it dropped, or the first commit of another run (which may have
            // followed a rewrite): take everything up to it from history, whose request checks the epoch.
            catchUpTarget = seq
            return
        }
        deliver(received, seq: seq, epoch: summary.epoch)
    }

    private func deliver(_ parts: [Tributary_V1_DidSave], seq: UInt64, epoch: UInt64) {
        let passing = parts.filter(options.filter.matches)
        if !passing.isEmpty { ready.append(.didSave(DidSave(parts: passing))) }
        position = seq
        self.epoch = epoch
    }

    // MARK: - History and snapshots

    private func loadHistoryPage(until target: UInt64) async throws {
        guard let position, target == 0 || target > position else {
            catchUpTarget = nil
            return
        }
        let page: Tributary_V1_HistoryReply
        do {
            page = try await client.history(
                after: FeedPosition(seq: position, epoch: epoch), until: target, filter: options.filter)
        } catch let error as ProtocolError where error.code == .historyPruned || error.code == .feedRewritten {
            try cannotFollow(error)
            return
        } catch let error as ProtocolError {
            throw ChangeFeedError(message: "the coordinator refused a history request: \(error)", protocolError: error)
        }
        var index = 0
        while index < page.parts.count {
            let seq = page.parts[index].seq
            var end = index
            while end < page.parts.count && page.parts[end].seq == seq { end += 1 }
            // The coordinator filtered the parts already; `deliver` filters again, which passes them all.
            deliver(Array(page.parts[index..<end]), seq: seq, epoch: page.parts[index].epoch)
            index = end
        }
        if page.throughSeq >= self.position ?? 0 {
            self.position = page.throughSeq
            epoch = page.throughEpoch
        }
        let goal = target == 0 ? page.lastSeq : min(target, page.lastSeq)
        if page.throughSeq >= goal {
            catchUpTarget = nil
            if target == 0 { ready.append(.caughtUp(seq: page.throughSeq)) }
        }
    }

    /// Asks the store whether its history up to `position` is the one delivered (a history request that reads
    /// nothing: the coordinator checks the position's epoch first).
    private func checkHistory() async throws {
        checkPending = false
        guard let position else { return }
        do {
            _ = try await client.history(
                after: FeedPosition(seq: position, epoch: epoch), until: position, filter: options.filter,
                maxCommits: 1)
        } catch let error as ProtocolError where error.code == .historyPruned {
            return  // nothing more to read at this position: the next gap finds it
        } catch let error as ProtocolError where error.code == .feedRewritten {
            try cannotFollow(error)
        } catch let error as ProtocolError {
            throw ChangeFeedError(message: "the coordinator refused a history request: \(error)", protocolError: error)
        }
    }

    /// The history from `position` cannot be read (pruned, or rewritten): a snapshot to go on from, when the
    /// options ask for one; otherwise the feed stops with the coordinator's error.
    private func cannotFollow(_ error: ProtocolError) throws {
        guard options.snapshotWhenPruned else {
            throw ChangeFeedError(message: error.message, protocolError: error)
        }
        if error.code == .feedRewritten {
            // What was delivered from that seq on is not the store's: say so; the snapshot replaces it.
            ready.append(.rewritten(fromSeq: error.seq))
            parts.removeAll()
        }
        catchUpTarget = nil
        snapshotID = 0
    }

    private func loadSnapshotPage() async throws {
        let page = try await request {
            try await self.client.snapshotPage(id: self.snapshotID ?? 0, entities: self.options.filter.entities)
        }
        snapshotID = page.done ? nil : page.snapshotID
        ready.append(.snapshot(objects: page.objects, seq: page.seq, isLast: page.done))
        if page.done {
            // Continue after the snapshot: the live parts buffered meanwhile are checked against it as usual.
            position = page.seq
            epoch = page.epoch
            catchUpTarget = 0
        }
    }

    private func request<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ProtocolError {
            throw ChangeFeedError(message: "the coordinator refused a feed request: \(error)", protocolError: error)
        }
    }
}
