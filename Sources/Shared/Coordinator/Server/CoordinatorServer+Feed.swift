import Foundation
import TributaryProtocol

extension CoordinatorServer {
    /// Publishes a commit's didSave parts, one message per entity (topic = entity name), then its summary on
    /// `$commits`. Heartbeats are published on the same actor, so one never overtakes a commit it counts.
    func publish(_ events: CommitEvents) {
        for part in events.parts {
            let topic = Data(part.entity.utf8)
            if feedSubscriptions.wants(topic) { loop.send([topic, part.body], on: Self.feedSocket) }
        }
        if feedSubscriptions.wants(Self.commitsTopic) {
            loop.send([Self.commitsTopic, events.summary], on: Self.feedSocket)
        }
    }

    private static let commitsTopic = Data(Wire.commitsTopic.utf8)
    private static let jobsTopic = Data(Wire.jobsTopic.utf8)

    /// Publishes jobs' progress and states on the `$jobs` topic (after the commits that changed them).
    func publishProgress(ofJobs ids: [Int64]) async {
        guard !ids.isEmpty, feedSubscriptions.wants(Self.jobsTopic) else { return }
        do {
            for progress in try await store.progress(ofJobs: ids) { publish(progress) }
        } catch {
            logger.error("cannot read job progress", metadata: ["error": "\(error)"])
        }
    }

    /// Publishes one job's progress and state on the `$jobs` topic.
    func publish(_ progress: Tributary_V1_JobProgress) {
        guard feedSubscriptions.wants(Self.jobsTopic), let body = try? progress.serializedData() else { return }
        loop.send([Self.jobsTopic, body], on: Self.feedSocket)
    }

    /// Publishes the last sequence number on the heartbeat topic, so subscribers know they are connected and
    /// can tell whether they missed anything.
    func publishFeedHeartbeat() {
        let heartbeat = Tributary_V1_FeedHeartbeat.with {
            $0.lastSeq = lastSeq
            $0.at = Date().timeIntervalSince1970
        }
        guard let body = try? heartbeat.serializedData() else { return }
        loop.send([Data(Wire.heartbeatTopic.utf8), body], on: Self.feedSocket)
    }
}
