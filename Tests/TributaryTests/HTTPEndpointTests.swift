import Foundation
import Testing

@testable import TributaryClient
@testable import TributaryCore
@testable import TributaryDemo
@testable import TributaryHTTP
@testable import TributaryProtocol

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

    @Test("probes are open; reads from loopback are open; beyond it a token is needed, or reads only without one")
    func access() {
        let token = "0123456789abcdef"
        let withToken = HTTPAccess(token: token)
        let without = HTTPAccess(token: nil)
        typealias Asked = HTTPAccess.Asked
        for access in [withToken, without] {
            #expect(access.decide(.probe, Asked(fromLoopback: false)) == .allowed)
            #expect(access.decide(.read, Asked(fromLoopback: true)) == .allowed)
        }
        #expect(without.decide(.change, Asked(fromLoopback: true)) == .allowed)
        #expect(without.decide(.read, Asked(fromLoopback: false)) == .allowed)
        #expect(without.decide(.change, Asked(fromLoopback: false)) != .allowed)
        #expect(without.decide(.change, Asked(fromLoopback: false, bearer: token)) != .allowed)
        #expect(withToken.decide(.read, Asked(fromLoopback: false)) != .allowed)
        #expect(withToken.decide(.read, Asked(fromLoopback: false, bearer: token + "x")) != .allowed)
        #expect(withToken.decide(.read, Asked(fromLoopback: false, bearer: token)) == .allowed)
        #expect(withToken.decide(.change, Asked(fromLoopback: false, bearer: token)) == .allowed)
        // With a token, an action needs it from loopback too (a local user or process is not trusted for it).
        #expect(withToken.decide(.change, Asked(fromLoopback: true)) != .allowed)
        #expect(withToken.decide(.change, Asked(fromLoopback: true, bearer: token)) == .allowed)
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

    @Test(
        "the dashboard's pages are the files of Sources/Shared/HTTP/Dashboard, byte for byte, compiled into the binary")
    func dashboardFiles() async throws {
        let directory = try TemporaryDirectory()
        let (_, exitStatus) = try await TestCoordinator.with(in: directory, workers: 0) { coordinator in
            let url = try #require(coordinator.process.httpURL)
            for (path, file) in [
                ("", "index.html"), ("dashboard.css", "dashboard.css"), ("dashboard.js", "dashboard.js"),
            ] {
                let served = try await HTTPRequests.send(url + path)
                let source = try String(
                    contentsOf: Repository.root.appendingPathComponent("Sources/Shared/HTTP/Dashboard/\(file)"),
                    encoding: .utf8)
                #expect(served.status == 200 && served.body == source, "/\(path) is not \(file)")
            }
        }
        #expect(exitStatus == 0)
    }

    @Test("/readyz answers 200 while serving and 503 while the coordinator drains; /healthz stays 200")
    func readinessWhileDraining() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: ["--drain-seconds", "5"])
        defer { Task { await coordinator.process.stop() } }
        let url = try #require(coordinator.process.httpURL)
        #expect(try await HTTPRequests.send(url + "readyz").status == 200)
        let worker = InProcessWorker.start(
            endpoint: coordinator.process.listenEndpoint, handlers: [EndlessHandler(sawCancellation: Locked(false))])
        defer { worker.cancel() }
        let client = try JobClient(endpoint: coordinator.process.listenEndpoint)
        let id = try await client.push([JobSpec(kind: "endless")]).ids[0]
        try await waitUntil("the job to commit a batch") { try await client.job(id).done >= 1 }
        await client.close()

        // SIGTERM: the router tells the worker to drain and waits for its running job.
        coordinator.process.terminate()
        try await waitUntil("/readyz to answer 503") {
            try await HTTPRequests.send(url + "readyz").status == 503
        }
        #expect(try await HTTPRequests.send(url + "healthz").status == 200)
        worker.cancel()
        #expect(await coordinator.process.stop() == 0)
    }

    @Test("with --http-token, a real endpoint answers reads from loopback, refuses an action without the token (401)")
    func tokenOverHTTP() async throws {
        let directory = try TemporaryDirectory()
        let token = "0123456789abcdef0123456789abcdef"
        let file = try directory.write("http.token", token + "\n")
        let coordinator = try await TestCoordinator.start(
            in: directory, workers: 0, arguments: ["--http", "127.0.0.1:*", "--http-token", file])
        defer { Task { await coordinator.process.stop() } }
        let url = try #require(coordinator.process.httpURL)
        #expect(try await HTTPRequests.send(url + "api/status").status == 200)
        let action = ["X-Tributary-Action": "1"]
        let refused = try await HTTPRequests.send(url + "api/jobs/1/cancel", method: "POST", headers: action)
        #expect(refused.status == 401 && refused.body.contains("UNAUTHORIZED"), "\(refused)")
        let wrong = try await HTTPRequests.send(
            url + "api/jobs/1/cancel", method: "POST", token: token + "x", headers: action)
        #expect(wrong.status == 401, "\(wrong)")
        let allowed = try await HTTPRequests.send(
            url + "api/jobs/1/cancel", method: "POST", token: token, headers: action)
        #expect(allowed.status == 404 && allowed.body.contains("UNKNOWN_JOB"), "\(allowed)")
        // A queue's pause is an action too.
        let refusedPause = try await HTTPRequests.send(
            url + "api/queues/imports/pause", method: "POST", headers: action)
        #expect(refusedPause.status == 401, "\(refusedPause)")
        let paused = try await HTTPRequests.send(
            url + "api/queues/imports/pause", method: "POST", token: token, headers: action)
        #expect(paused.status == 200 && paused.body.contains(#""name":"imports","paused":true"#), "\(paused)")
        let escaped = try await HTTPRequests.send(
            url + "api/queues/a%2Db/pause", method: "POST", token: token, headers: action)
        #expect(escaped.status == 200 && escaped.body.contains(#""name":"a-b","paused":true"#), "\(escaped)")
        let status = try await HTTPRequests.send(url + "api/status")
        #expect(status.body.contains(#""name":"imports","paused":true"#), "\(status)")
        let badName = try await HTTPRequests.send(
            url + "api/queues/no%20spaces/resume", method: "POST", token: token, headers: action)
        #expect(
            badName.status == 400 && badName.body.contains("INVALID_REQUEST") && badName.body.contains("may hold only"),
            "\(badName)")
    }
}
