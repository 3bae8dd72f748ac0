import Foundation
import Testing

/// `tributary push job --wait` learns of the job's end from the feed's `$jobs` topic, not by polling. Each test
/// holds the job back until the command has subscribed and checked it once the feed was live (its debug log says
/// so), then lets it end: from there only a `$jobs` message or the periodic check (every 5 s) can tell the command,
/// and the command's debug log names which one did.
@Suite("push --wait follows the feed", .serialized)
struct PushWaitTests {
    @Test("push job --wait of an empty job returns done as soon as $jobs says so")
    func doneFromTheFeed() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 1) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let feed = ["--feed", coordinator.process.feedEndpoint]
            let paused = try await Binaries.run("tributary", ["queues", "pause", "default"] + jobs)
            #expect(paused.status == 0, "\(paused.error)")
            let waiting = try StartedProcess.start(
                "tributary", ["push", "job", "--kind", "noop", "--wait", "--log-level", "debug"] + jobs + feed)
            defer { waiting.kill() }
            let live = try await waiting.waitForError(containing: "once the feed was live")
            #expect(live.contains("checked job 1 (queued)"), "\(live)")

            let resumed = try await Binaries.run("tributary", ["queues", "resume", "default"] + jobs)
            #expect(resumed.status == 0, "\(resumed.error)")
            let (status, output, errors) = try await waiting.finish(timeout: .seconds(60))
            #expect(status == 0, "\(errors)")
            #expect(output == ["job 1 done"])
            #expect(errors.last?.contains("checked job 1 (done) after $jobs said job 1 is done") == true, "\(errors)")
            // A periodic check may come while the resume runs (on a loaded machine it can take longer than the
            // check's 5 s); it must not be what saw the job done.
            #expect(!errors.contains { $0.contains("(done) on the periodic check") }, "\(errors)")
        }
        #expect(exitStatus == 0)
    }

    @Test("push job --wait of a job whose parent is cancelled exits 1 naming why, told by $jobs")
    func deadFromTheFeed() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let feed = ["--feed", coordinator.process.feedEndpoint]
            let parent = try await Binaries.run("tributary", ["push", "job", "--kind", "noop"] + jobs)
            #expect(parent.status == 0 && parent.output == "1", "\(parent.error)")
            let waiting = try StartedProcess.start(
                "tributary",
                ["push", "job", "--kind", "noop", "--after", "1", "--wait", "--log-level", "debug"] + jobs + feed)
            defer { waiting.kill() }
            let live = try await waiting.waitForError(containing: "once the feed was live")
            #expect(live.contains("checked job 2 (waiting)"), "\(live)")

            let cancelled = try await Binaries.run("tributary", ["jobs", "cancel", "1"] + jobs)
            #expect(cancelled.status == 0, "\(cancelled.error)")
            let (status, output, errors) = try await waiting.finish(timeout: .seconds(60))
            #expect(status == 1)
            #expect(output.isEmpty, "\(output)")
            #expect(
                errors.contains("job 2 failed (dead after 0 attempt(s)): job 1, which it waits for, was cancelled"),
                "\(errors)")
            #expect(errors.contains { $0.contains("checked job 2 (dead) after $jobs said job 2 is dead") }, "\(errors)")
        }
        #expect(exitStatus == 0)
    }

    @Test("push job --wait given a feed that never answers still returns, checking as often as it polled")
    func silentFeed() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 1) { coordinator in
            let jobs = ["--listen", coordinator.process.listenEndpoint]
            let nowhere = ["--feed", "ipc://" + directory.path("no-feed")]
            let pushed = try await Binaries.run(
                "tributary", ["push", "job", "--kind", "noop", "--wait"] + jobs + nowhere, timeout: .seconds(60))
            #expect(pushed.status == 0, "\(pushed.error)")
            #expect(pushed.output == "job 1 done")
            #expect(pushed.error.isEmpty, "nothing more is printed: \(pushed.error)")
        }
        #expect(exitStatus == 0)
    }
}
