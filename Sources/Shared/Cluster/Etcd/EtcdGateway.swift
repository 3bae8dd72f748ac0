import Foundation

/// The JSON of etcd's v3 gateway (`/v3/kv/…`, `/v3/lease/…`): protobuf messages in proto3's JSON mapping, where a
/// 64-bit integer travels as a string, bytes as base64, and a field at its default value is left out.
enum EtcdGateway {
    /// A 64-bit integer as the gateway writes it (a string) and reads it (a string or a number).
    struct Int64Text: Codable, Sendable {
        let value: Int64

        init(_ value: Int64) { self.value = value }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self), let value = Int64(text) {
                self.value = value
            } else {
                value = try container.decode(Int64.self)
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(String(value))
        }
    }

    struct Header: Decodable {
        let revision: Int64Text?
    }

    struct KeyValue: Decodable {
        let key: Data?
        let value: Data?
        let create_revision: Int64Text?
        let mod_revision: Int64Text?
        let lease: Int64Text?
    }

    struct LeaseGrantRequest: Encodable {
        let TTL: Int64Text
    }

    struct LeaseGrantResponse: Decodable {
        let ID: Int64Text?
        let TTL: Int64Text?
        let error: String?
    }

    struct LeaseRequest: Encodable {
        let ID: Int64Text
    }

    /// A keep-alive's answer: one message of the stream, `{"result": {…}}`; a lapsed or unknown lease has no TTL.
    struct LeaseKeepAliveResponse: Decodable {
        struct Result: Decodable {
            let TTL: Int64Text?
        }
        /// An error of the stream (etcd without a leader of its own, say): not an answer about the lease.
        struct StreamError: Decodable {
            let message: String?
        }
        let result: Result?
        let error: StreamError?
    }

    struct RangeRequest: Encodable {
        let key: Data
    }

    struct RangeResponse: Decodable {
        let header: Header?
        let kvs: [KeyValue]?
    }

    struct Compare: Encodable {
        let key: Data
        let target = "CREATE"
        let result = "EQUAL"
        let create_revision: Int64Text
    }

    struct PutRequest: Encodable {
        let key: Data
        let value: Data
        let lease: Int64Text?
    }

    struct DeleteRangeRequest: Encodable {
        let key: Data
    }

    /// One operation of a transaction: exactly one field set.
    struct RequestOp: Encodable {
        var request_put: PutRequest?
        var request_range: RangeRequest?
        var request_delete_range: DeleteRangeRequest?
    }

    struct TxnRequest: Encodable {
        let compare: [Compare]
        let success: [RequestOp]
        let failure: [RequestOp]
    }

    struct TxnResponse: Decodable {
        struct ResponseOp: Decodable {
            let response_range: RangeResponse?
        }
        let header: Header?
        let succeeded: Bool?
        let responses: [ResponseOp]?
    }
}
