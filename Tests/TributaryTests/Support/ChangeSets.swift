import Foundation

@testable import TributaryProtocol

extension Tributary_V1_EntityBatch {
    /// An insert of one object of `entity` (a new id unless `id` names one) with one string attribute set: the
    /// smallest real change set.
    static func inserting(_ entity: String, _ attribute: String, _ value: String, id: UUID = UUID())
        -> Tributary_V1_EntityBatch
    {
        .with {
            $0.entity = entity
            $0.operation = .insert
            $0.ids = id.bytes
            $0.columns = [
                .with {
                    $0.name = attribute; $0.strings = [value]
                }
            ]
        }
    }
}
