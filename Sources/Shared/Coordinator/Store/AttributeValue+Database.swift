import Foundation
import GRDB
import TributaryCore

extension AttributeValue {
    /// The value SQLite stores for this attribute value (bools as 0/1, dates as seconds since 1970, uuids as 16
    /// bytes).
    var databaseValue: DatabaseValue {
        switch self {
        case .string(let string): string.databaseValue
        case .int(let int): int.databaseValue
        case .double(let double): double.databaseValue
        case .bool(let bool): (bool ? 1 : 0).databaseValue
        case .date(let date): date.timeIntervalSince1970.databaseValue
        case .data(let data): data.databaseValue
        case .uuid(let uuid): uuid.bytes.databaseValue
        }
    }

    /// The attribute value of a stored SQLite value for an attribute of `type`; nil for NULL or a value of
    /// another storage class.
    init?(_ value: DatabaseValue, type: AttributeType) {
        switch (type, value.storage) {
        case (_, .null): return nil
        case (.string, .string(let string)): self = .string(string)
        case (.int, .int64(let int)): self = .int(int)
        case (.bool, .int64(let int)): self = .bool(int != 0)
        case (.double, .double(let double)): self = .double(double)
        case (.double, .int64(let int)): self = .double(Double(int))
        case (.date, .double(let seconds)): self = .date(Date(timeIntervalSince1970: seconds))
        case (.date, .int64(let seconds)): self = .date(Date(timeIntervalSince1970: Double(seconds)))
        case (.data, .blob(let data)): self = .data(data)
        case (.uuid, .blob(let data)) where data.count == 16: self = .uuid(UUID(bytes: data, at: data.startIndex))
        default: return nil
        }
    }
}
