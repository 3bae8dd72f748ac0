import Foundation

extension CoordinatorServer {
    /// Reads the allow-list again (on SIGHUP): new keys are admitted from their next connection; workers whose key
    /// is gone are dropped, their running jobs released to the queue, and their further messages refused.
    func reloadAllowListNow() {
        guard let curve = configuration.curve else { return }
        let revoked: [Data]
        do {
            guard let reloaded = try intake.reloadAllowList(from: curve.allowDirectory) else { return }
            logger.notice("allow-list reloaded", metadata: ["keys": "\(reloaded.keys)"])
            revoked = reloaded.revoked
        } catch {
            logger.error("allow-list not reloaded; the previous one stays", metadata: ["error": "\(error)"])
            return
        }
        for peer in revoked where sessions.workers[peer] != nil { sessions.left(peer, reason: "its key was revoked") }
    }
}
