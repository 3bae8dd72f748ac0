import Dispatch

/// The loop as an actor's executor: an actor whose `unownedExecutor` is the loop's runs on the loop thread,
/// between polls, so a message it receives reaches it and a reply it sends leaves without waking another thread
/// (for a request answered at once, both hops of a round trip stay on one thread).
///
/// Jobs run in the order enqueued, before the loop sends what is queued and polls again; a job enqueued from
/// another thread wakes the loop. The actor must not block: while it runs, the sockets are not read. Jobs
/// enqueued before ``start()`` start the thread (polling only its wake-up until then); once the loop stopped they
/// run on a serial queue of their own, so an actor on a stopped loop still finishes what it awaits.
extension SocketLoop: SerialExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        enum Action { case none, wake, startThread, fallback }
        let action = withJobs { state -> Action in
            if state.threadEnded { return .fallback }
            state.jobs.append(job)
            if !state.threadStarted {
                state.threadStarted = true
                return .startThread
            }
            return state.jobs.count == 1 ? .wake : .none
        }
        switch action {
        case .none: break
        // From the loop thread (a job resuming another, a message received), the jobs run before the next poll.
        case .wake: if !onLoopThread { raiseWakeup() }
        case .startThread: startThread()
        case .fallback: fallbackQueue.async { [self] in job.runSynchronously(on: asUnownedSerialExecutor()) }
        }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
