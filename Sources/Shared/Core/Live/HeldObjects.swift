import Foundation

/// The objects a context holds, for key paths: one it does not hold (or holds as a fault) is noted as missed, so
/// the live result fetches instead of judging on nothing.
final class HeldObjects: PredicateResolver {
    let context: ObjectContext
    private(set) var missed = false

    init(context: ObjectContext) { self.context = context }

    func subject(for id: UUID, entity: String) -> PredicateSubject? {
        guard let object = context.registered[id], !object.isFault else {
            missed = true
            return nil
        }
        return object.predicateSubject
    }
}
