import Foundation

/// Debian's etcd (`/usr/bin/etcd`, package `etcd-server`) as a one-member cluster for a demo or a benchmark: its
/// client and peer URLs on `address`, its data in `directory`, its log beside it. Stopped by ``stop()``.
public final class EtcdProcess: Sendable {
    /// Where Debian's package puts it.
    public static let executable = "/usr/bin/etcd"

    /// Its client URL (`http://ADDRESS:PORT`), as `--etcd` takes it.
    public let endpoint: String
    private let process: Process

    /// Starts etcd and returns once its client port accepts connections.
    /// - Parameters:
    ///   - ports: the client and peer ports.
    /// - Throws: ``EtcdProcessError`` when etcd is not installed, or does not listen within 30 s.
    public init(address: String, ports: (client: Int, peer: Int), directory: URL) async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw EtcdProcessError(
                description:
                    "etcd is not installed: apt-get install etcd-server (Debian's etcd; `make bench` installs it)")
        }
        endpoint = "http://\(address):\(ports.client)"
        let peer = "http://\(address):\(ports.peer)"
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = [
            "--name", "tributary", "--data-dir", directory.path, "--listen-client-urls", endpoint,
            "--advertise-client-urls", endpoint, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", "tributary=\(peer)", "--logger", "zap", "--log-outputs",
            directory.deletingLastPathComponent().appendingPathComponent("etcd.log").path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(30)
        do {
            while !LoopbackPorts.accepts(address: address, port: ports.client) {
                guard process.isRunning, ContinuousClock.now < deadline else {
                    throw EtcdProcessError(description: "etcd did not listen at \(endpoint) within 30 s")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        } catch {
            // Not left running: cancelled, or not listening in time.
            stop()
            throw error
        }
    }

    /// Installs Debian's `etcd-server` with apt when etcd is missing and this process runs as root; otherwise leaves
    /// it to ``init(address:ports:directory:)`` to say what to run.
    public static func installIfMissing() async throws {
        guard !FileManager.default.isExecutableFile(atPath: executable), getuid() == 0,
            FileManager.default.isExecutableFile(atPath: "/usr/bin/apt-get")
        else { return }
        Terminal.error("installing etcd-server with apt (Debian's etcd)")
        for arguments in [["update", "-qq"], ["install", "-y", "-qq", "etcd-server"]] {
            let apt = Process()
            apt.executableURL = URL(fileURLWithPath: "/usr/bin/apt-get")
            apt.arguments = arguments
            apt.environment = ProcessInfo.processInfo.environment.merging(["DEBIAN_FRONTEND": "noninteractive"]) {
                $1
            }
            apt.standardOutput = FileHandle.nullDevice
            try apt.run()
            while apt.isRunning { try await Task.sleep(for: .milliseconds(100)) }
            guard apt.terminationStatus == 0 else {
                throw EtcdProcessError(description: "apt-get \(arguments.joined(separator: " ")) failed")
            }
        }
    }

    /// Stops it (SIGTERM); returns at once (etcd exits within moments, its data directory left as it is).
    public func stop() {
        if process.isRunning { process.terminate() }
    }
}

/// Why etcd did not start.
public struct EtcdProcessError: Error, CustomStringConvertible {
    public let description: String
}
