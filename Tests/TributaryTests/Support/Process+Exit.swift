import Foundation

extension Process {
    /// Waits for the process to exit without blocking a thread: `waitUntilExit()` would hold one of the few
    /// threads of the cooperative pool, on which other tests' in-process workers run, for as long as a graceful
    /// stop takes.
    /// Returns early when the waiting task is cancelled (a timed-out wait), leaving the process to its caller.
    func exited() async {
        while isRunning && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
    }
}
