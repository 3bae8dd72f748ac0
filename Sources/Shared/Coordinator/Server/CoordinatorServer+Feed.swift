import Foundation
import TributaryProtocol

extension CoordinatorServer {
    /// Publishes jobs' progress and states on the feed's `$jobs` topic (after the commits that changed them),
    /// when some subscriber follows it.
    func publishProgress(ofJobs ids: [Int64]) async {
        guard !ids.isEmpty, publisher.wants(FeedPublisher.jobsTopic) else { return }
        do {
            for progress in try await store.progress(ofJobs: ids) { publisher.publish(progress) }
        } catch {
            logger.error("cannot read job progress", metadata: ["error": "\(error)"])
        }
    }
}
