import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension HTTPEndpoint {
    /// Checks that the host resolves and the port can be bound now, before the coordinator opens its store: a start
    /// refused for a taken port (another coordinator's, say) changes nothing on disk. (Another process could still
    /// take the port between this check and the bind.)
    /// - Throws: ``HTTPEndpointError`` naming the endpoint and why it cannot be bound.
    public func checkAvailable() throws {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let address = found else {
            throw HTTPEndpointError("--http \(host):\(port): cannot resolve the host")
        }
        defer { freeaddrinfo(found) }
        // Port 0 takes a free one when the service binds: only the host had to resolve.
        guard port != 0 else { return }
        let socket = Glibc.socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return }
        defer { close(socket) }
        var yes: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if bind(socket, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0 {
            let reason = String(cString: strerror(errno))
            throw HTTPEndpointError(
                "--http \(host):\(port): cannot listen there (\(reason)); is another coordinator using it? "
                    + "Choose another with --http HOST:PORT, or --http off")
        }
    }
}
