import NIOCore
import NIOHTTP1
import NIOPosix

/// One HTTP/1.1 `POST` of a JSON body over a connection of its own, closed after the answer: all that etcd's v3
/// JSON gateway needs (a call a second at most, on a local network). Runs on NIO's event loops, never blocking a
/// thread of the cooperative pool.
struct JSONPost {
    /// An answer that is not `200 OK`, or a connection that ended before the whole answer came.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let host: String
    let port: Int

    /// Sends `body` to `path` and returns the answer's body, or throws once `timeout` has passed.
    func send(_ path: String, _ body: [UInt8], timeout: Duration) async throws -> [UInt8] {
        try await withThrowingTaskGroup(of: [UInt8].self) { group in
            group.addTask { try await exchange(path, body, timeout: timeout) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw Failure(description: "no answer from \(host):\(port) within \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    private func exchange(_ path: String, _ body: [UInt8], timeout: Duration) async throws -> [UInt8] {
        let milliseconds = Int64(
            timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(milliseconds))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path)
            head.headers.add(name: "Host", value: "\(host):\(port)")
            head.headers.add(name: "Content-Type", value: "application/json")
            head.headers.add(name: "Content-Length", value: String(body.count))
            head.headers.add(name: "Connection", value: "close")
            try await outbound.write(.head(head))
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
            try await outbound.write(.end(nil))
            var status: HTTPResponseStatus?
            var answer: [UInt8] = []
            for try await part in inbound {
                switch part {
                case .head(let head): status = head.status
                case .body(let buffer): answer += buffer.readableBytesView
                case .end:
                    guard status == .ok else {
                        throw Failure(
                            description: "\(host):\(port)\(path) answered \(status.map { "\($0.code)" } ?? "nothing"): "
                                + String(decoding: answer.prefix(300), as: UTF8.self))
                    }
                    return answer
                }
            }
            throw Failure(description: "\(host):\(port) closed the connection before its answer to \(path) ended")
        }
    }
}
