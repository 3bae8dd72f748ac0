import Foundation
import TributaryProtocol

extension PredicateValue {
    /// The value as the wire's `Value`. A list has no `Value` of its own (its elements travel in
    /// `Comparison.values`), so it gives an empty `Value`, which ``init(wire:)`` refuses.
    package var wire: Tributary_V1_Value {
        var message = Tributary_V1_Value()
        switch self {
        case .null: message.nullValue = true
        case .string(let value): message.stringValue = value
        case .int(let value): message.intValue = value
        case .double(let value): message.doubleValue = value
        case .bool(let value): message.boolValue = value
        case .date(let value): message.dateValue = value.timeIntervalSince1970
        case .data(let value): message.dataValue = value
        case .uuid(let value): message.uuidValue = value.bytes
        case .list: break
        }
        return message
    }

    /// Reads a value from the wire. Dates arrive as seconds since 1970.
    /// - Throws: ``FetchPredicateError``: `syntax` for an empty `Value`, `wrongType` for a uuid that is not 16 bytes.
    package init(wire: Tributary_V1_Value) throws {
        switch wire.kind {
        case .none:
            throw FetchPredicateError(.syntax, "malformed predicate: a Value message has none of its kinds set")
        case .nullValue: self = .null
        case .stringValue(let value): self = .string(value)
        case .intValue(let value): self = .int(value)
        case .doubleValue(let value): self = .double(value)
        case .boolValue(let value): self = .bool(value)
        case .dateValue(let value): self = .date(Date(timeIntervalSince1970: value))
        case .dataValue(let value): self = .data(value)
        case .uuidValue(let value):
            guard value.count == 16 else {
                throw FetchPredicateError(.wrongType, "a uuid value must be 16 bytes, not \(value.count)")
            }
            self = .uuid(UUID(bytes: value, at: value.startIndex))
        }
    }
}
