/// A feature of the protocol that a peer without it would not refuse but silently ignore: its fields decode as
/// unknown ones, and the message is then served as if they were absent (a job with parents run at once, a `[d]`
/// comparison judged with diacritics). A message using one names it in `Envelope.requires`.
///
/// The names are the wire's; a newer peer may name capabilities this build does not know, which is why `requires`
/// holds strings.
public enum Capability: String, CaseIterable, Comparable, Sendable {
    /// Named queues and their weights: `WorkerHello.queues` and `queue_weights` (beyond the default queue alone),
    /// `JobSpec.queue`.
    case queues
    /// Job dependencies: `JobSpec.after_jobs`, `after_batches` and `after_pushed`.
    case dependencies
    /// A batch's completion callback: `PushJobs.on_complete`.
    case batchCallbacks = "batch-callbacks"
    /// The comparison options `[c]`, `[d]` and `[cd]`: `Comparison.case_insensitive` and `diacritic_insensitive`.
    case predicateOptions = "predicate-options"
    /// Saves of contexts outside any job, answered once per save id: `SaveChanges.save_id`.
    case contextSaves = "context-saves"
    /// Batch updates and deletes made in the writer: `SaveChanges.batch_change`.
    case batchChanges = "batch-changes"
    /// Feed positions checked against the store's history by their epoch: `HistoryRequest.after_epoch`,
    /// `SubscriberUpdate.epoch`.
    case feedEpochs = "feed-epochs"

    /// The capabilities of this build: every one.
    public static let supported = Set(allCases)

    /// Orders capabilities by name, as messages list them.
    public static func < (lhs: Capability, rhs: Capability) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The names of `capabilities`, sorted, as the wire and messages carry them.
    public static func names(_ capabilities: some Sequence<Capability>) -> [String] {
        capabilities.map(\.rawValue).sorted()
    }
}
