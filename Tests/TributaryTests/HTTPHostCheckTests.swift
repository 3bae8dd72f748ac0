import Foundation
import Testing

@testable import TributaryHTTP
@testable import TributaryMessaging

/// The checks that keep web pages of other sites out of a loopback endpoint: the `Host` a request names (DNS
/// rebinding), the header an action carries, and the `Origin` it comes from.
@Suite("HTTP endpoint: Host, Origin and the action header")
struct HTTPHostCheckTests {
    /// What a request naming a host gets, for a read and for an action, from loopback on an endpoint without a token.
    enum Expected: Equatable {
        case allowed, badRequest, forbidden

        init(_ decision: HTTPAccess.Decision) {
            switch decision {
            case .allowed: self = .allowed
            case .badRequest: self = .badRequest
            case .forbidden, .unauthorized: self = .forbidden
            }
        }

        var status: Int {
            switch self {
            case .allowed: 200
            case .badRequest: 400
            case .forbidden: 403
            }
        }
    }

    /// `Host` values (nil: no `Host` at all) and what they get, for reads and actions alike. `PORT` stands for the
    /// endpoint's port.
    static let hosts: [(host: String?, expected: Expected)] = [
        ("127.0.0.1:PORT", .allowed), ("127.0.0.1", .allowed), ("localhost:PORT", .allowed),
        ("LOCALHOST:PORT", .allowed), ("Localhost", .allowed), ("[::1]:PORT", .allowed), ("127.9.8.7:PORT", .allowed),
        ("[::ffff:127.0.0.1]:PORT", .allowed),
        // A rebound domain whose name starts like a loopback address.
        ("127.0.0.1.evil.example:PORT", .forbidden), ("127.0.0.1.evil.example", .forbidden),
        ("localhost.evil.example:PORT", .forbidden), ("evil.example:PORT", .forbidden),
        // Spellings some resolvers read as loopback: not the names the endpoint accepts.
        ("127.0.0.1.:PORT", .forbidden), ("localhost.:PORT", .forbidden), ("0x7f.0.0.1:PORT", .forbidden),
        ("2130706433:PORT", .forbidden), ("127.1:PORT", .forbidden), ("127.000.0.1:PORT", .forbidden),
        ("[::2]:PORT", .forbidden), ("[::]:PORT", .forbidden),
        // Not a host with an optional port at all.
        ("127.0.0.1:PORT:junk", .badRequest), ("[::1].evil:PORT", .badRequest), ("[::1]evil", .badRequest),
        ("[::1", .badRequest), ("127.0.0.1:", .badRequest), ("127.0.0.1:99999", .badRequest),
        ("user@127.0.0.1:PORT", .badRequest), ("127.0.0.1/x", .badRequest), ("127.0.0.1 :PORT", .badRequest),
        ("", .badRequest), (nil, .badRequest),
    ]

    @Test("a read and an action from loopback are served only for a loopback Host, matched exactly")
    func hostTable() {
        let access = HTTPAccess(token: nil)
        for (host, expected) in Self.hosts {
            let named = host?.replacingOccurrences(of: "PORT", with: "7402")
            for action in [HTTPAccess.Action.read, .change] {
                let decision = access.decide(action, .init(fromLoopback: true, host: named))
                #expect(Expected(decision) == expected, "\(action) with Host \(named ?? "(none)"): \(decision)")
            }
            // Probes and the page's files hold no data: open whatever the Host.
            #expect(access.decide(.probe, .init(fromLoopback: true, host: named)) == .allowed)
        }
        // A second Host header is refused rather than one of the two believed.
        let twice = HTTPAccess.Asked(fromLoopback: true, host: "127.0.0.1:7402", repeatedHost: true)
        #expect(Expected(access.decide(.read, twice)) == .badRequest)
    }

    @Test("an action needs X-Tributary-Action: 1 and no Origin but the endpoint's own (not null, not another port)")
    func actionHeaderAndOrigin() {
        let access = HTTPAccess(token: nil)
        func action(_ header: String?, origin: String? = nil, host: String = "127.0.0.1:7402") -> Expected {
            Expected(
                access.decide(.change, .init(fromLoopback: true, host: host, origin: origin, actionHeader: header)))
        }
        #expect(action("1") == .allowed)
        #expect(action(" 1 ") == .allowed)
        for header in [nil, "0", "", "true", "yes", "11"] {
            #expect(action(header) == .forbidden, "X-Tributary-Action: \(header ?? "(none)")")
        }
        #expect(action("1", origin: "http://127.0.0.1:7402") == .allowed)
        #expect(action("1", origin: "HTTP://127.0.0.1:7402") == .allowed)
        #expect(action("1", origin: "http://localhost:7402", host: "localhost:7402") == .allowed)
        #expect(action("1", origin: "http://[::1]:7402", host: "[::1]:7402") == .allowed)
        #expect(action("1", origin: "http://127.0.0.1", host: "127.0.0.1") == .allowed)
        // Through a TLS proxy that keeps the name: the origin's port is the scheme's, and so is the Host's.
        #expect(action("1", origin: "https://localhost", host: "localhost") == .allowed)
        for origin in [
            "null", "http://127.0.0.1:3000", "http://127.0.0.1", "http://localhost:7402", "http://evil.example",
            "http://127.0.0.1.evil.example:7402", "file://", "ftp://127.0.0.1:7402", "http://127.0.0.1:7402:x", "",
        ] {
            #expect(action("1", origin: origin) == .forbidden, "Origin: \(origin)")
        }
        // A read is not an action: neither the header nor the Origin is asked of it.
        let read = access.decide(.read, .init(fromLoopback: true, origin: "null", actionHeader: nil))
        #expect(read == .allowed)
    }

    @Test("loopback names and addresses are matched exactly, for the endpoint's own bind address too")
    func loopbackNames() {
        for name in [
            "localhost", "LocalHost", "127.0.0.1", "127.255.0.9", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1",
        ] {
            #expect(LoopbackHost.contains(name), "\(name)")
        }
        for name in [
            "127.0.0.1.evil.example", "127.0.0.1.", "localhost.", "0x7f.0.0.1", "2130706433", "127.1", "127.0.0.01",
            "+127.0.0.1", "128.0.0.1", "::2", "::", "::ffff:10.0.0.1", "", "lo",
        ] {
            #expect(!LoopbackHost.contains(name), "\(name)")
        }
        #expect(!HTTPEndpoint(host: "127.0.0.1.evil.example", port: 7402).isLoopback)
    }

    @Test("a real endpoint: hostile Host values refused for a read and a queue's pause; the queue stays unpaused")
    func hostTableOverHTTP() async throws {
        let directory = try TemporaryDirectory()
        let coordinator = try await TestCoordinator.start(in: directory, workers: 0)
        defer { Task { await coordinator.process.stop() } }
        let url = try #require(coordinator.process.httpURL)
        let port = try #require(URL(string: url)?.port)
        func send(_ method: String, _ path: String, host: String?, _ extra: [String] = []) async throws -> (
            status: Int, body: String
        ) {
            let hostLine = host.map { ["Host: " + $0.replacingOccurrences(of: "PORT", with: String(port))] } ?? []
            return try await RawHTTP.send(port: port, method, path, headers: hostLine + extra)
        }
        func paused() async throws -> Bool {
            try await send("GET", "/api/status", host: "127.0.0.1:PORT").body.contains(#""paused":true"#)
        }
        let action = ["X-Tributary-Action: 1"]
        for (host, expected) in Self.hosts where expected != .allowed {
            let read = try await send("GET", "/api/status", host: host)
            #expect(read.status == expected.status, "GET /api/status with Host \(host ?? "(none)"): \(read)")
            let pause = try await send("POST", "/api/queues/default/pause", host: host, action)
            #expect(pause.status == expected.status, "POST …/pause with Host \(host ?? "(none)"): \(pause)")
            #expect(pause.body.contains(expected == .forbidden ? "FORBIDDEN" : "INVALID_REQUEST"), "\(pause)")
        }
        let twice = try await send("GET", "/api/status", host: "127.0.0.1:PORT", ["Host: evil.example"])
        #expect(twice.status == 400, "\(twice)")
        let unknownPath = try await send("GET", "/api/nothing-here", host: "127.0.0.1.evil.example:PORT")
        #expect(unknownPath.status == 403, "the check runs before routing: \(unknownPath)")
        #expect(try await paused() == false, "a refused request paused the queue")
        // Headers a page of another site could send.
        for header in [["X-Tributary-Action: 0"], ["X-Tributary-Action: 1", "Origin: null"]] {
            let refused = try await send("POST", "/api/queues/default/pause", host: "127.0.0.1:PORT", header)
            #expect(refused.status == 403, "\(header): \(refused)")
        }
        let otherPort = try await send(
            "POST", "/api/queues/default/pause", host: "127.0.0.1:PORT",
            action + ["Origin: http://127.0.0.1:\(port == 65_535 ? port - 1 : port + 1)"])
        #expect(otherPort.status == 403, "\(otherPort)")
        #expect(try await paused() == false, "a refused action paused the queue")
        let probe = try await send("GET", "/healthz", host: "evil.example")
        #expect(probe.status == 200, "probes are open whatever the Host: \(probe)")
        for (host, expected) in Self.hosts where expected == .allowed {
            let read = try await send("GET", "/api/status", host: host)
            #expect(read.status == 200, "GET /api/status with Host \(host ?? "(none)"): \(read)")
        }
        let sameOrigin = try await send(
            "POST", "/api/queues/default/pause", host: "localhost:PORT", action + ["Origin: http://localhost:\(port)"])
        #expect(sameOrigin.status == 200, "\(sameOrigin)")
        #expect(try await paused())
    }
}
