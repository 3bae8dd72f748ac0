import Dispatch

/// The loop as an actor's executor: an actor whose `unownedExecutor` is the loop's runs on the loop thread,
/// between polls, so a message it receives reaches it and a reply it sends leaves without waking another thread
/// (for a request answered at once, both hops of a round trip stay on one thread).
///
/// Jobs run in the order enqueued, before the loop sends what is queued and polls again; a job enqueued from
/// another thread wakes the loop. The actor must not block: while it runs, the sockets are not read. Jobs
/// enqueued before ``start()`` start the thread (polling only its wake-up until then); once the loop stopped they
/// run on a serial queue of their own, so an actor on a stopped loop still finishes what it awaits.
///
/// The loop is also a task executor: a task run with it as its preference (`withTaskExecutorPreference`), such as
/// the one that serves the actor's inbound messages, is resumed on the loop thread when a continuation it awaits is
/// resumed from elsewhere (the loop handing over messages, the store's writer answering), rather than on the
/// cooperative pool, from where it would hop back to the loop: a thread woken twice per step for nothing.
extension SocketLoop: SerialExecutor, TaskExecutor {
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
        case .fallback: fallbackQueue.async { [self] in run(job) }
        }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Runs a job as the loop's serial executor, keeping the loop as its task's preferred executor: an actor job and
    /// a nonisolated job of a task preferring the loop run alike, one at a time on the loop's thread (or its
    /// fallback queue).
    func run(_ job: UnownedJob) {
        job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
    }
}
