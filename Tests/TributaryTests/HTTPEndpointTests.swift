import Foundation
import Testing

@testable import TributaryDemo
@testable import TributaryHTTP

/// `--http` and `--http-token`: parsing, the beyond-loopback rule, and who may do what.
@Suite("HTTP endpoint: options and access")
struct HTTPEndpointTests {
    @Test("--http takes HOST:PORT, [v6]:PORT, port * and off, and names what is wrong")
    func parsing() throws {
        #expect(try HTTPEndpoint.parse("127.0.0.1:7402") == HTTPEndpoint(host: "127.0.0.1", port: 7402))
        #expect(try HTTPEndpoint.parse("[::1]:*") == HTTPEndpoint(host: "::1", port: 0))
        #expect(try HTTPEndpoint.parse("off") == nil)
        for bad in ["7402", ":7402", "127.0.0.1:http", "127.0.0.1:70000"] {
            #expect(throws: HTTPEndpointError.self, "\(bad)") { try HTTPEndpoint.parse(bad) }
        }
    }

    @Test("beyond loopback needs a token or --insecure; loopback needs neither")
    func beyondLoopback() throws {
        #expect(HTTPEndpoint(host: "127.0.0.1", port: 1).refusal(insecure: false) == nil)
        #expect(HTTPEndpoint(host: "localhost", port: 1).refusal(insecure: false) == nil)
        let open = HTTPEndpoint(host: "0.0.0.0", port: 7402)
        #expect(open.refusal(insecure: false)?.contains("--http-token") == true)
        #expect(open.refusal(insecure: true) == nil)
        #expect(
            HTTPEndpoint(host: "0.0.0.0", port: 7402, token: String(repeating: "t", count: 16))
                .refusal(insecure: false) == nil)
    }

    @Test("a token file must exist and hold one line of 16 characters or more")
    func tokenFile() throws {
        let directory = try TemporaryDirectory()
        let good = try directory.write("good", "  0123456789abcdef0123 \nignored\n")
        #expect(try HTTPEndpoint.readToken(file: good) == "0123456789abcdef0123")
        let short = try directory.write("short", "secret\n")
        #expect(throws: HTTPEndpointError.self) { try HTTPEndpoint.readToken(file: short) }
        #expect(throws: HTTPEndpointError.self) { try HTTPEndpoint.readToken(file: directory.path("missing")) }
    }

    @Test("probes are open; loopback may do anything; beyond it a token is needed, or reads only without one")
    func access() {
        let token = "0123456789abcdef"
        let withToken = HTTPAccess(token: token)
        let without = HTTPAccess(token: nil)
        for access in [withToken, without] {
            #expect(access.decide(.probe, fromLoopback: false, bearer: nil) == .allowed)
            #expect(access.decide(.change, fromLoopback: true, bearer: nil) == .allowed)
        }
        #expect(without.decide(.read, fromLoopback: false, bearer: nil) == .allowed)
        #expect(without.decide(.change, fromLoopback: false, bearer: nil) != .allowed)
        #expect(without.decide(.change, fromLoopback: false, bearer: token) != .allowed)
        #expect(withToken.decide(.read, fromLoopback: false, bearer: nil) != .allowed)
        #expect(withToken.decide(.read, fromLoopback: false, bearer: token + "x") != .allowed)
        #expect(withToken.decide(.read, fromLoopback: false, bearer: token) == .allowed)
        #expect(withToken.decide(.change, fromLoopback: false, bearer: token) == .allowed)
    }

    @Test("a port another process listens on refuses the start before the store is opened")
    func takenPort() async throws {
        let directory = try TemporaryDirectory()
        let first = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await first.process.stop() } }
        let url = try #require(first.process.httpURL)
        let port = try #require(URL(string: url)?.port)
        let other = try TemporaryDirectory()
        let model = try other.write("model.json", DemoData.modelJSON)
        let refused = try await Binaries.run(
            "tributary-coordinator",
            [
                "--store", other.path("s.sqlite"), "--model", model, "--listen", "tcp://127.0.0.1:*", "--feed",
                "tcp://127.0.0.1:*", "--http", "127.0.0.1:\(port)",
            ])
        #expect(refused.status != 0)
        #expect(refused.error.contains("--http 127.0.0.1:\(port): cannot listen there"), "\(refused.error)")
        #expect(!FileManager.default.fileExists(atPath: other.path("s.sqlite")), "a refused start created the store")
    }
}
