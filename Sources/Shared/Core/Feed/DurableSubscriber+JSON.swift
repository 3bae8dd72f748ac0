import Foundation

/// A durable subscriber's JSON (the HTTP API's `/api/subscribers`): `{"name", "position", "updatedAt"}`, the time in
/// seconds since 1970.
extension DurableSubscriber: Encodable {
    enum CodingKeys: String, CodingKey {
        case name, position, updatedAt
    }

    /// Writes every field under its key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(position, forKey: .position)
        try container.encode(updatedAt.timeIntervalSince1970, forKey: .updatedAt)
    }
}
