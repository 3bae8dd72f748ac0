import Foundation
import Synchronization
import ZeroMQ

/// What the router (``CoordinatorServer``) handles besides the socket's messages, one at a time and in order:
/// the writer's finished writes, its own timer, and what other services tell it. Posted to its mailbox, which it
/// takes at each step of its loop and handles after the messages received by then (``CoordinatorServer/post(_:)``).
enum RouterEvent: Sendable {
    /// The commit pipeline released writes to answer (``CommitPipeline/takeAnswers()``).
    case written
    /// Time to reap silent workers and look for jobs that became due.
    case tick
    /// Maintenance failed attempts that outlived their job's timeout: their workers are to stop them.
    case attemptsExpired([JobStore.TimedOutAttempt])
    /// Jobs were queued by another service (a schedule's ticks): workers with credit are to claim.
    case jobsQueued
    /// A full rate limit has room again (``WriterHandOver/wake(at:through:)``).
    case rateLimitRoom
    /// A local pool process exited.
    case workerExited(pid: Int32, name: String)
    /// SIGHUP: the allow-list is to be read again.
    case reloadAllowList
    /// A handler's write changed something for the workers (``JobsChange``).
    case jobsChanged(JobsChange)
}

/// The router's mailbox: events posted from any thread, taken all at once by the router's loop, which the poster
/// wakes through the socket loop's inbound queue (so the loop waits on one thing).
final class RouterMailbox: Sendable {
    private let events = Mutex<[RouterEvent]>([])
    private let inbound: InboundQueue

    init(waking inbound: InboundQueue) {
        self.inbound = inbound
    }

    /// Posts an event and wakes the router's loop.
    func post(_ event: RouterEvent) {
        events.withLock { $0.append(event) }
        inbound.wake()
    }

    /// The events posted since the last call, oldest first.
    func take() -> [RouterEvent] {
        events.withLock { events in
            defer { events.removeAll(keepingCapacity: true) }
            return events
        }
    }
}
