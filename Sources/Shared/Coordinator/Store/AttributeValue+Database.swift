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
        self.init(SQLValue(value), type: type)
    }
}
