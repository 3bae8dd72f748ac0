import Foundation

/// TCP ports for processes a command starts (a demo's cluster): free ones picked by the kernel, and whether one
/// accepts connections yet.
public enum LoopbackPorts {
    /// `count` TCP ports free on 127.0.0.1 right now: each bound to port 0, read back, and released together (so no
    /// two are the same).
    public static func free(_ count: Int) throws -> [Int] {
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        var ports: [Int] = []
        for _ in 0..<count {
            let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socket >= 0 else { throw PortError(description: "socket: \(String(cString: strerror(errno)))") }
            sockets.append(socket)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    bind(socket, address, length) == 0 && getsockname(socket, address, &length) == 0
                }
            }
            guard bound else { throw PortError(description: "bind: \(String(cString: strerror(errno)))") }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return ports
    }

    /// Whether something accepts TCP connections at `address`:`port` (IPv4) now.
    public static func accepts(address: String, port: Int) -> Bool {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_addr.s_addr = inet_addr(address)
        target.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Why no port could be picked.
    public struct PortError: Error, CustomStringConvertible {
        public let description: String
    }
}
