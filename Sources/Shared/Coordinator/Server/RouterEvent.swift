import Foundation
import ZeroMQ

/// What the router (``CoordinatorServer``) handles, one at a time and in order, from its inbox: messages from
/// the socket, the writer's finished writes, its own timer, and what other services tell it.
enum RouterEvent: Sendable {
    /// What one wake-up of the socket loop received.
    case received([SocketLoop.Inbound])
    /// The writer has finished writes to answer (``StoreWriter/takeAnswers()``).
    case written
    /// Time to reap silent workers and look for jobs that became due.
    case tick
    /// Maintenance failed attempts that outlived their job's timeout: their workers are to stop them.
    case attemptsExpired([RootStore.TimedOutAttempt])
    /// A local pool process exited.
    case workerExited(pid: Int32, name: String)
    /// SIGHUP: the allow-list is to be read again.
    case reloadAllowList
}
