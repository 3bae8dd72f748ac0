/// The last commit a view merged, and the commands waiting for a later one.
actor MergedCommits {
    private var seq: UInt64 = 0
    private var waiters: [(UInt64, CheckedContinuation<Void, Never>)] = []

    /// The view merged `seq`: wakes whoever waits for it or an earlier one.
    func reached(_ seq: UInt64) {
        self.seq = max(self.seq, seq)
        let ready = waiters.filter { $0.0 <= self.seq }
        waiters.removeAll { $0.0 <= self.seq }
        for (_, waiter) in ready { waiter.resume() }
    }

    /// Returns once the view has merged `target` or a later commit.
    func wait(for target: UInt64) async {
        guard seq < target else { return }
        await withCheckedContinuation { waiters.append((target, $0)) }
    }
}
