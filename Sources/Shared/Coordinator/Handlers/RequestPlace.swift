import TributaryCore
import TributaryProtocol

/// What a request needs before its answer, made when the handler takes it: nothing (a read of what is committed),
/// the saves and writes handed to the writer before it (a read after them), or a write of its own queued behind them.
enum RequestPlace {
    /// A read of what is committed: it waits for nothing, so a stalled store holds it up no more than its read.
    static func committed<Value>(_ parts: HandlerParts, _ read: @escaping @Sendable () async throws -> Value)
        -> Promised<Value>
    {
        Promised(readers: parts.readers, work: read)
    }

    /// A read that sees every save and write handed to the writer before now, once the pipeline answered them (a
    /// fetch after a save sent without waiting for its ack). It forces no commit early.
    static func afterSaves<Value>(_ parts: HandlerParts, _ read: @escaping @Sendable () async throws -> Value)
        -> Promised<Value>
    {
        let (barrier, pipeline) = (parts.writer.barrier(), parts.writer.pipeline)
        return Promised(readers: parts.readers) {
            await pipeline.waitUntilAnswered(barrier)
            return try await read()
        }
    }

    /// The result of `write`, queued now behind the saves handed over before it; its value comes once the pipeline
    /// released the write and the writes before it were answered (so a save's ack sent before a command that followed
    /// it goes out first).
    /// - Parameters:
    ///   - jobID: the job the write is about: a constraint of the store refusing it is the request's fault
    ///     (`INVALID_REQUEST` naming the job).
    ///   - then: what follows once the write is answered, whether or not anyone awaits the promise (the router told
    ///     what changed for its workers, the log).
    /// - Throws: ``ProtocolError`` `SHUTTING_DOWN` when the writer stopped, `TOO_MANY_REQUESTS` when too many
    ///   writes are queued behind a stalled store.
    static func written<Value>(
        _ write: StoreWrite<Value>, _ parts: HandlerParts, jobID: Int64? = nil,
        then: (@Sendable (Value) -> Void)? = nil
    ) throws -> Promised<Value> {
        let queued: QueuedOperation<Value>
        do {
            queued = try parts.writer.queue(write)
        } catch is WriterStoppedError {
            throw ProtocolError(.shuttingDown, "the coordinator is shutting down")
        } catch {
            throw ProtocolError(.tooManyRequests, "\(error)")
        }
        let pipeline = parts.writer.pipeline
        let answered = WriterBarrier(saves: 0, position: queued.position)
        if let then {
            Task {
                await pipeline.waitUntilAnswered(answered)
                if let value = try? queued.released() { then(value) }
            }
        }
        return Promised(readers: parts.readers) {
            await pipeline.waitUntilAnswered(answered)
            do {
                return try queued.released()
            } catch is WriterStoppedError {
                throw ProtocolError(.shuttingDown, "the coordinator is shutting down")
            } catch let error as StoreError where error.code == .constraint && jobID != nil {
                throw ProtocolError(.invalidRequest, error.message, jobID: UInt64(jobID ?? 0))
            }
        }
    }
}
