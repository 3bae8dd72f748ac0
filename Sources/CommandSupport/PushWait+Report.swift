import TributaryClient
import TributaryCore

extension PushWait {
    /// How a push command ends: says on standard error how many jobs their unique keys kept out, prints the
    /// batch's name (when `namingBatch`) and its ids, or `--json`'s object, then waits for the batch with `waiter`
    /// when there is one; the client is closed either way.
    /// - Throws: what the wait throws (a dead job's exit).
    public static func report(
        _ pushed: PushedBatch, json: Bool, namingBatch: Bool, waiter: PushWait?, unit: Unit, client: JobClient
    ) async throws {
        if !pushed.duplicates.isEmpty {
            Terminal.error(
                "not enqueued: \(pushed.duplicates.count) of them, whose unique keys waiting, queued or running jobs hold"
            )
        }
        do {
            if json {
                Terminal.line(try JSONOutput.pushed(pushed))
            } else {
                if namingBatch { Terminal.line(pushed.batch) }
                for id in pushed.ids { Terminal.line(String(id)) }
            }
            try await waiter?.batch(pushed.batch, client: client, unit: unit)
        } catch {
            await client.close()
            throw error
        }
        await client.close()
    }
}
