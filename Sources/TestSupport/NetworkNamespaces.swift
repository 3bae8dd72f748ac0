import Foundation

/// Hosts for a test or a benchmark: network namespaces it creates itself (`ip netns add`), each joined to the first ("A") by a
/// veth pair on a /24 of its own (A is 10.201.N.1, the other end 10.201.N.2), with every address inside them;
/// removed by ``remove()``. Needs root and iproute2: ``available`` says whether this machine allows it.
public final class NetworkNamespaces: Sendable {
    /// Namespace names, the first being the hub.
    public let names: [String]

    /// Whether namespaces can be created here (root and `ip netns`), tried once.
    public static let available: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: ip) else { return false }
        let probe = "trbprobe\(getpid())"
        guard (try? run(["netns", "add", probe])) != nil else { return false }
        _ = try? run(["netns", "del", probe])
        return true
    }()

    public static let ip = "/usr/sbin/ip"

    /// Creates the hub and `spokes` other namespaces, each linked to the hub.
    public init(spokes: Int) throws {
        let prefix = "trb\(getpid() % 100_000)"
        names = ["\(prefix)a"] + (1...spokes).map { "\(prefix)\(Character(UnicodeScalar(UInt8(97 + $0))))" }
        // Left over by a run of the same process id that was killed before it could remove them.
        for name in names { _ = try? Self.run(["netns", "del", name]) }
        do {
            for name in names {
                try Self.run(["netns", "add", name])
                try Self.run(["-n", name, "link", "set", "lo", "up"])
            }
            for spoke in 1...spokes {
                let (hubSide, spokeSide) = (link(spoke), "eth0")
                try Self.run([
                    "link", "add", hubSide, "netns", names[0], "type", "veth", "peer", "name", spokeSide, "netns",
                    names[spoke],
                ])
                try Self.run(["-n", names[0], "addr", "add", "\(hubAddress(spoke))/24", "dev", hubSide])
                try Self.run(["-n", names[spoke], "addr", "add", "\(spokeAddress(spoke))/24", "dev", spokeSide])
                try Self.run(["-n", names[0], "link", "set", hubSide, "up"])
                try Self.run(["-n", names[spoke], "link", "set", spokeSide, "up"])
            }
        } catch {
            remove()
            throw error
        }
    }

    /// The hub's end of spoke `index`'s link.
    public func link(_ index: Int) -> String { "\(names[0])-\(index)" }

    /// The hub's address on spoke `index`'s link.
    public func hubAddress(_ index: Int) -> String { "10.201.\(index).1" }

    /// Spoke `index`'s address on its link.
    public func spokeAddress(_ index: Int) -> String { "10.201.\(index).2" }

    /// Takes spoke `index`'s link down (`up` false) or up again, at the hub's end.
    public func setLink(_ index: Int, up: Bool) throws {
        try Self.run(["-n", names[0], "link", "set", link(index), up ? "up" : "down"])
    }

    /// `ip netns exec NAME executable arguments…` (`ip` execs the executable: the process is it).
    public func command(in index: Int, _ executable: URL, _ arguments: [String]) -> (URL, [String]) {
        (URL(fileURLWithPath: Self.ip), ["netns", "exec", names[index], executable.path] + arguments)
    }

    /// Deletes every namespace (and so their links); safe to call twice.
    public func remove() {
        for name in names { _ = try? Self.run(["netns", "del", name]) }
    }

    /// Runs `ip` with `arguments` to completion.
    /// - Throws: when it exits non-zero, naming the command and its error output.
    @discardableResult
    public static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ip)
        process.arguments = arguments
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NamespaceError(
                description:
                    "ip \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(String(decoding: err, as: UTF8.self))"
            )
        }
        return String(decoding: out, as: UTF8.self)
    }

    public struct NamespaceError: Error, CustomStringConvertible {
        public let description: String
    }
}
