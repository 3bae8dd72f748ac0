import Foundation
import TributaryProtocol

extension CoordinatorServer {
    /// Where every job that ended passes, whichever way it ended (its completing save, a failure, a lost worker, a
    /// timeout, a cancel, a parent's failure settling it): the job counters count it, and the feed's `$jobs` topic
    /// carries its state, after the commit that ended it.
    /// - Parameter published: the caller put their progress on the feed already (a completing save's, right after
    ///   its commit's didSave).
    func jobsEnded(_ endings: [JobEnding], published: Bool = false) {
        for ending in endings {
            if jobMetrics.ended(ending), ending.state == .done { totals.jobDone() }
            if !published { publisher.publish(ending.progress) }
        }
    }
}
