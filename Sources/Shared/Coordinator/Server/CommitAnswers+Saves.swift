import Foundation
import TributaryCore
import TributaryProtocol

/// A group commit's saves answered: each acknowledged (its didSave published, its job's progress after it) or
/// refused alone.
extension CommitAnswers {
    /// Answers each save of a group commit: an ack (publishing its didSave) or the error that refused it alone.
    func answer(
        _ members: [SaveGroup.Member], _ results: [Result<AppliedSave, any Error>], writtenAt: ContinuousClock.Instant
    ) {
        for (member, result) in zip(members, results) {
            switch result {
            case .success(let applied):
                acknowledge(member, applied, writtenAt: writtenAt)
                // The job's progress as the commit left it, after the commit's didSave.
                if let progress = applied.progress {
                    parts.publisher.publish(progress)
                    if progress.state == .done {
                        // The router knows the kind of the attempts it sent out.
                        sessions.jobsEnded([JobEnding(kind: "", progress: progress, ranAttempt: true)], published: true)
                    }
                }
            case .failure(let error):
                replies.logRefusal("save refused", error, peer: member.peer, metadata: ["job": "\(member.save.jobID)"])
                replies.sendOrGather(
                    to: member.peer, requestID: member.requestID, .error(Self.wireError(error, save: member.save)))
            }
        }
    }

    private func acknowledge(_ member: SaveGroup.Member, _ applied: AppliedSave, writtenAt: ContinuousClock.Instant) {
        var ack = applied.ack
        ack.jobID = UInt64(member.save.jobID)
        ack.batchIndex = UInt32(clamping: member.save.batchIndex)
        switch applied.outcome {
        case .committed(_, let events, _, _):
            WriterMetrics.commitToPublish.record(duration: writtenAt.duration(to: .now))
            parts.publisher.publish(events)
            WriterMetrics.commits.increment()
            WriterMetrics.rowsCommitted.increment(by: Int64(events.objectsChanged))
            parts.totals.committed(rows: events.objectsChanged)
            WriterMetrics.saveToCommit.record(duration: member.receivedAt.duration(to: writtenAt))
        case .committedEmpty:
            WriterMetrics.saveToCommit.record(duration: member.receivedAt.duration(to: writtenAt))
        case .duplicate, .answeredBefore:
            break
        }
        if member.save.completesJob, sessions.workers[member.peer]?.id == member.worker {
            sessions.workers[member.peer]?.jobs[member.save.jobID] = nil
        }
        replies.sendOrGather(to: member.peer, requestID: member.requestID, .saveAck(ack))
    }

    private static func wireError(_ error: any Error, save: SaveRequest) -> Tributary_V1_Error {
        switch error {
        case let error as LeaseError:
            let code: Tributary_V1_ErrorCode =
                error.isUnknownJob
                ? .unknownJob : error.isCancelled ? .jobCancelled : error.isOutOfOrder ? .invalidRequest : .staleLease
            return ProtocolError(code, error.message, jobID: UInt64(save.jobID)).wire
        case let error as StoreError:
            return ProtocolError(error, jobID: UInt64(save.jobID)).wire
        default:
            return ProtocolError(.internal, "\(error)", jobID: UInt64(save.jobID)).wire
        }
    }
}
