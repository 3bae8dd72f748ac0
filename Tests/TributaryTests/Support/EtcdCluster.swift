import Foundation
import Testing
import TributaryCluster
import TributaryCommandSupport

/// Debian's etcd (`etcd-server`, installed by `make test-tools`) for a test: `count` members on loopback ports of
/// their own, data in the test's directory, SIGKILLed when released.
final class EtcdCluster {
    /// The members' client URLs, in order.
    let endpoints: [String]
    private let processes: [Process]

    /// Starts the members and returns once a client reaches the cluster.
    init(count: Int = 1, in directory: TemporaryDirectory) async throws {
        let etcd = URL(fileURLWithPath: "/usr/bin/etcd")
        try #require(
            FileManager.default.isExecutableFile(atPath: etcd.path),
            "etcd is not installed: `make test-tools` installs Debian's etcd-server")
        let ports = try LoopbackPorts.free(count * 2)
        let clients = (0..<count).map { "http://127.0.0.1:\(ports[$0 * 2])" }
        let peers = (0..<count).map { "http://127.0.0.1:\(ports[$0 * 2 + 1])" }
        let initial = (0..<count).map { "m\($0)=\(peers[$0])" }.joined(separator: ",")
        let token = "tributary-\(UUID().uuidString.prefix(8))"
        processes = try (0..<count).map { index in
            let process = Process()
            process.executableURL = etcd
            process.arguments = [
                "--name", "m\(index)", "--data-dir", directory.path("etcd-m\(index)"),
                "--listen-client-urls", clients[index], "--advertise-client-urls", clients[index],
                "--listen-peer-urls", peers[index], "--initial-advertise-peer-urls", peers[index],
                "--initial-cluster", initial, "--initial-cluster-state", "new", "--initial-cluster-token", token,
                "--logger", "zap", "--log-outputs", directory.path("etcd-m\(index).log"),
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        endpoints = clients
        let client = try EtcdClient(endpoints: clients)
        try await waitUntil("etcd to answer", timeout: .seconds(30), interval: .milliseconds(50)) {
            do {
                _ = try await client.get("/ready")
                return true
            } catch {
                return false
            }
        }
    }

    deinit {
        for process in processes where process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
