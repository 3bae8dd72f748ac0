import Foundation
import Synchronization

/// A key as etcd holds it.
public struct EtcdKeyValue: Sendable, Equatable {
    /// The key's name.
    public let key: String
    /// What it holds.
    public let value: [UInt8]
    /// The revision that created the key: for a leader key, the leader's epoch.
    public let createRevision: Int64
    /// The revision that last wrote it.
    public let modRevision: Int64
    /// The lease the key lives under (0: none).
    public let lease: Int64
}

/// What ``EtcdClient/create(_:value:lease:)`` did.
public enum EtcdCreateResult: Sendable, Equatable {
    /// The key was absent and now holds the value; the revision that created it.
    case created(revision: Int64)
    /// The key was there already, as this.
    case exists(EtcdKeyValue)
}

/// A client of etcd's v3 API through its JSON gateway, for the few calls a cluster of coordinators makes: leases,
/// reading a key, creating it only when absent, and writing or deleting only while a guard key is the one a given
/// revision created (the leader's fencing). Each call goes to the member that answered last, and to the next ones
/// in turn when that one does not answer in time.
public final class EtcdClient: Sendable {
    /// An etcd endpoint that is not `http://HOST:PORT`.
    public struct BadEndpoint: Error, CustomStringConvertible {
        /// Which endpoint, and what is wrong with it.
        public let description: String
    }

    private let members: [JSONPost]
    /// How long one call waits for one member.
    private let timeout: Duration
    /// The member that answered last: tried first.
    private let preferred = Mutex(0)

    /// - Parameters:
    ///   - endpoints: the members' client URLs, `http://HOST:PORT` (etcd's `--advertise-client-urls`).
    ///   - timeout: how long a call waits for one member before it tries the next.
    /// - Throws: ``BadEndpoint`` naming an endpoint that is not `http://HOST:PORT`, or when there is none.
    public init(endpoints: [String], timeout: Duration = .seconds(1)) throws {
        guard !endpoints.isEmpty else { throw BadEndpoint(description: "no etcd endpoint given") }
        members = try endpoints.map { text in
            guard let url = URL(string: text), url.scheme == "http", let host = url.host, let port = url.port,
                url.path.isEmpty || url.path == "/"
            else {
                throw BadEndpoint(description: "etcd endpoint '\(text)' is not http://HOST:PORT")
            }
            return JSONPost(host: host, port: port)
        }
        self.timeout = timeout
    }

    /// Grants a lease of `seconds`; returns its id.
    public func grantLease(seconds: Int64) async throws -> Int64 {
        let answer: EtcdGateway.LeaseGrantResponse = try await call(
            "/v3/lease/grant", EtcdGateway.LeaseGrantRequest(TTL: .init(seconds)))
        guard let id = answer.ID?.value, id != 0 else {
            throw JSONPost.Failure(description: "etcd granted no lease: \(answer.error ?? "no id in its answer")")
        }
        return id
    }

    /// Keeps `lease` alive: returns the seconds it has left from now, 0 when it lapsed or was revoked.
    public func keepAlive(_ lease: Int64) async throws -> Int64 {
        let answer: EtcdGateway.LeaseKeepAliveResponse = try await call(
            "/v3/lease/keepalive", EtcdGateway.LeaseRequest(ID: .init(lease)))
        if let error = answer.error {
            throw JSONPost.Failure(
                description: "etcd could not keep the lease alive: \(error.message ?? "no reason given")")
        }
        return answer.result?.TTL?.value ?? 0
    }

    /// Revokes `lease`, deleting every key under it; a lease that lapsed already is no error.
    public func revoke(_ lease: Int64) async throws {
        do {
            let _: EtcdGateway.RangeResponse = try await call(
                "/v3/lease/revoke", EtcdGateway.LeaseRequest(ID: .init(lease)))
        } catch let failure as JSONPost.Failure where failure.description.contains("lease not found") {
            return
        }
    }

    /// The key's value, nil when absent.
    public func get(_ key: String) async throws -> EtcdKeyValue? {
        let answer: EtcdGateway.RangeResponse = try await call(
            "/v3/kv/range", EtcdGateway.RangeRequest(key: Data(key.utf8)))
        return answer.kvs?.first.map(Self.keyValue)
    }

    /// Creates `key` with `value` under `lease` if no such key exists (a compare of its create revision with 0).
    public func create(_ key: String, value: [UInt8], lease: Int64) async throws -> EtcdCreateResult {
        let name = Data(key.utf8)
        let answer: EtcdGateway.TxnResponse = try await call(
            "/v3/kv/txn",
            EtcdGateway.TxnRequest(
                compare: [.init(key: name, create_revision: .init(0))],
                success: [.init(request_put: .init(key: name, value: Data(value), lease: .init(lease)))],
                failure: [.init(request_range: .init(key: name))]))
        if answer.succeeded == true {
            guard let revision = answer.header?.revision?.value else {
                throw JSONPost.Failure(description: "etcd's answer to creating '\(key)' has no revision")
            }
            return .created(revision: revision)
        }
        guard let existing = answer.responses?.first?.response_range?.kvs?.first else {
            // Deleted between the compare and the read: not there now, so not created either.
            throw JSONPost.Failure(description: "'\(key)' was neither created nor found")
        }
        return .exists(Self.keyValue(existing))
    }

    /// Writes `key` only while `guardKey` is the key created at revision `epoch` (a leader writing under its
    /// epoch): whether it was.
    public func put(_ key: String, value: [UInt8], lease: Int64? = nil, while guardKey: String, createdAt epoch: Int64)
        async throws -> Bool
    {
        let answer: EtcdGateway.TxnResponse = try await call(
            "/v3/kv/txn",
            EtcdGateway.TxnRequest(
                compare: [.init(key: Data(guardKey.utf8), create_revision: .init(epoch))],
                success: [
                    .init(request_put: .init(key: Data(key.utf8), value: Data(value), lease: lease.map { .init($0) }))
                ],
                failure: []))
        return answer.succeeded == true
    }

    /// Deletes `key` only if it is the key created at revision `revision`: whether it was.
    public func delete(_ key: String, createdAt revision: Int64) async throws -> Bool {
        let name = Data(key.utf8)
        let answer: EtcdGateway.TxnResponse = try await call(
            "/v3/kv/txn",
            EtcdGateway.TxnRequest(
                compare: [.init(key: name, create_revision: .init(revision))],
                success: [.init(request_delete_range: .init(key: name))], failure: []))
        return answer.succeeded == true
    }

    private static func keyValue(_ stored: EtcdGateway.KeyValue) -> EtcdKeyValue {
        EtcdKeyValue(
            key: String(decoding: stored.key ?? Data(), as: UTF8.self), value: Array(stored.value ?? Data()),
            createRevision: stored.create_revision?.value ?? 0, modRevision: stored.mod_revision?.value ?? 0,
            lease: stored.lease?.value ?? 0)
    }

    /// Posts `request` to the preferred member, then to each other in turn, and decodes the first answer.
    private func call<Answer: Decodable>(_ path: String, _ request: some Encodable) async throws -> Answer {
        let body = Array(try JSONEncoder().encode(request))
        let first = preferred.withLock { $0 }
        var failures: [String] = []
        for step in 0..<members.count {
            let index = (first + step) % members.count
            let answer: [UInt8]
            do {
                answer = try await members[index].send(path, body, timeout: timeout)
            } catch let failure as JSONPost.Failure where failure.description.contains(" answered 4") {
                // The member answered: the request itself was refused, and another member would refuse it too.
                throw failure
            } catch {
                try Task.checkCancellation()
                failures.append("\(error)")
                continue
            }
            preferred.withLock { $0 = index }
            do {
                return try JSONDecoder().decode(Answer.self, from: Data(answer))
            } catch {
                throw JSONPost.Failure(
                    description:
                        "etcd's answer to \(path) does not read: \(String(decoding: answer.prefix(300), as: UTF8.self))"
                )
            }
        }
        throw JSONPost.Failure(description: "no etcd member answered \(path): " + failures.joined(separator: "; "))
    }
}
