import Foundation
import TributaryProtocol

extension Tributary_V1_Value {
    /// The wire form of an attribute value, or of NULL.
    init(_ value: AttributeValue?) {
        self.init()
        switch value {
        case nil: nullValue = true
        case .string(let string)?: stringValue = string
        case .int(let int)?: intValue = int
        case .double(let double)?: doubleValue = double
        case .bool(let bool)?: boolValue = bool
        case .date(let date)?: dateValue = date.timeIntervalSince1970
        case .data(let data)?: dataValue = data
        case .uuid(let uuid)?: uuidValue = uuid.bytes
        }
    }

    /// The attribute value this wire value holds; nil for NULL, an empty value or a uuid that is not 16 bytes.
    var attributeValue: AttributeValue? {
        switch kind {
        case .nullValue, nil: nil
        case .stringValue(let string): .string(string)
        case .intValue(let int): .int(int)
        case .doubleValue(let double): .double(double)
        case .boolValue(let bool): .bool(bool)
        case .dateValue(let seconds): .date(Date(timeIntervalSince1970: seconds))
        case .dataValue(let data): .data(data)
        case .uuidValue(let bytes): bytes.count == 16 ? .uuid(UUID(bytes: bytes, at: bytes.startIndex)) : nil
        }
    }
}
