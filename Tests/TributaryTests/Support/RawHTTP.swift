import Foundation

/// HTTP/1.1 requests written byte for byte, for headers that URLSession rewrites or refuses to send (a hostile
/// `Host`, a second one, none at all).
enum RawHTTP {
    /// Sends `method path` to `127.0.0.1:port` with `headers` (each a whole `Name: value` line; no `Host` is added)
    /// and returns the response's status code and body. Runs its blocking socket calls on a thread of its own.
    static func send(port: Int, _ method: String, _ path: String, headers: [String]) async throws -> (
        status: Int, body: String
    ) {
        let request =
            ([method + " " + path + " HTTP/1.1"] + headers + ["Connection: close", "Content-Length: 0", ""])
            .joined(separator: "\r\n") + "\r\n"
        let response: String = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try exchange(port: port, Array(request.utf8)) })
            }
        }
        let lines = response.split(separator: "\r\n", maxSplits: 1, omittingEmptySubsequences: false)
        let statusLine = lines.first.map(String.init) ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw RawHTTPError(message: "no status line in the response: \(response.prefix(200))")
        }
        let body = response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (status, body)
    }

    private static func exchange(port: Int, _ bytes: [UInt8]) throws -> String {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawHTTPError(message: "socket: errno \(errno)") }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw RawHTTPError(message: "connect to port \(port): errno \(errno)") }
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw RawHTTPError(message: "write: errno \(errno)") }
            sent += count
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 { throw RawHTTPError(message: "read: errno \(errno)") }
            if count == 0 { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}

/// A raw request that could not be made or answered.
struct RawHTTPError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
