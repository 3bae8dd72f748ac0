import Foundation

/// A Swift type an attribute's values take in generated entity types (`tributary generate swift`): `String`, `Int`,
/// `Double`, `Bool`, `Date`, `Data` and `UUID`, each for its ``AttributeType``.
public protocol EntityValue: PredicateArgument, Equatable {
    /// The attribute type it stands for.
    static var attributeType: AttributeType { get }
    /// What a required attribute reads as before it is set (Core Data's scalar default): 0, "", false, …
    static var unsetValue: Self { get }
    /// The value of an attribute of ``attributeType``; nil for another case.
    init?(attributeValue: AttributeValue)
    /// The value as an attribute of ``attributeType`` holds it.
    var attributeValue: AttributeValue { get }
}

extension String: EntityValue {
    public static var attributeType: AttributeType { .string }
    public static var unsetValue: String { "" }
    public init?(attributeValue: AttributeValue) {
        guard case .string(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .string(self) }
}

extension Int: EntityValue {
    public static var attributeType: AttributeType { .int }
    public static var unsetValue: Int { 0 }
    public init?(attributeValue: AttributeValue) {
        guard case .int(let value) = attributeValue, let converted = Int(exactly: value) else { return nil }
        self = converted
    }
    public var attributeValue: AttributeValue { .int(Int64(self)) }
}

extension Double: EntityValue {
    public static var attributeType: AttributeType { .double }
    public static var unsetValue: Double { 0 }
    public init?(attributeValue: AttributeValue) {
        guard case .double(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .double(self) }
}

extension Bool: EntityValue {
    public static var attributeType: AttributeType { .bool }
    public static var unsetValue: Bool { false }
    public init?(attributeValue: AttributeValue) {
        guard case .bool(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .bool(self) }
}

extension Date: EntityValue {
    public static var attributeType: AttributeType { .date }
    public static var unsetValue: Date { Date(timeIntervalSince1970: 0) }
    public init?(attributeValue: AttributeValue) {
        guard case .date(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .date(self) }
}

extension Data: EntityValue {
    public static var attributeType: AttributeType { .data }
    public static var unsetValue: Data { Data() }
    public init?(attributeValue: AttributeValue) {
        guard case .data(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .data(self) }
}

extension UUID: EntityValue {
    public static var attributeType: AttributeType { .uuid }
    public static var unsetValue: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
    public init?(attributeValue: AttributeValue) {
        guard case .uuid(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .uuid(self) }
}
