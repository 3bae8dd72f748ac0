/// What a message needs from the coordinator that receives it.
extension Capability {
    /// The capabilities the coordinator must have to serve `body` as meant: those whose fields it sets to something
    /// a coordinator without them would read differently. Messages that set none need nothing (a hello for the
    /// default queue, a push without parents).
    public static func needed(by body: Tributary_V1_Envelope.OneOf_Body) -> Set<Capability> {
        switch body {
        case .workerHello(let hello):
            return hello.queues.contains { !isDefaultQueue($0) } ? [.queues] : []
        case .pushJobs(let push):
            var needed = push.jobs.reduce(into: Set<Capability>()) { $0.formUnion(Self.needed(by: $1)) }
            if push.hasOnComplete {
                needed.insert(.batchCallbacks)
                needed.formUnion(Self.needed(by: push.onComplete))
            }
            return needed
        case .putScheduleRequest(let request):
            return needed(by: request.schedule.job)
        case .saveChanges(let save):
            var needed: Set<Capability> = save.saveID.isEmpty ? [] : [.contextSaves]
            if save.hasBatchChange { needed.insert(.batchChanges) }
            return needed
        case .fetchRequest(let request):
            return request.hasPredicate && usesOptions(request.predicate) ? [.predicateOptions] : []
        case .historyRequest(let request):
            return request.afterEpoch == 0 ? [] : [.feedEpochs]
        case .subscriberUpdate(let update):
            return update.epoch == 0 ? [] : [.feedEpochs]
        default:
            return []
        }
    }

    /// What one job of a push or schedule needs.
    static func needed(by spec: Tributary_V1_JobSpec) -> Set<Capability> {
        var needed: Set<Capability> = []
        if !isDefaultQueue(spec.queue) { needed.insert(.queues) }
        if !spec.afterJobs.isEmpty || !spec.afterBatches.isEmpty || !spec.afterPushed.isEmpty {
            needed.insert(.dependencies)
        }
        return needed
    }

    /// Whether a queue name is the default queue, which a coordinator without queues serves anyway.
    private static func isDefaultQueue(_ name: String) -> Bool {
        name.isEmpty || name == Wire.defaultQueue
    }

    /// Whether a comparison of `predicate` is `[c]`, `[d]` or `[cd]`.
    private static func usesOptions(_ predicate: Tributary_V1_Predicate) -> Bool {
        switch predicate.kind {
        case .comparison(let comparison): comparison.caseInsensitive || comparison.diacriticInsensitive
        case .and(let list), .or(let list): list.operands.contains(where: usesOptions)
        case .not(let operand): usesOptions(operand)
        case .constant, nil: false
        }
    }
}
