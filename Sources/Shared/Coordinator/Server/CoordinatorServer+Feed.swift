import Foundation
import TributaryProtocol

extension CoordinatorServer {
    /// Publishes jobs' progress and states on the feed's `$jobs` topic (after the commits that changed them),
    /// when some subscriber follows it.
    func publishProgress(ofJobs ids: [Int64]) async {
        guard !ids.isEmpty, publisher.wants(FeedPublisher.jobsTopic) else { return }
        do {
            publisher.publish(try await store.progress(ofJobs: ids))
        } catch {
            logger.error("cannot read job progress", metadata: ["error": "\(error)"])
        }
    }
}
