import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import NIOCore
import ServiceLifecycle
import TributaryCoordinator
import TributaryCore
import TributaryProtocol

/// The HTTP endpoint's routes. The JSON API answers with the domain's types as ``JobJSON`` writes them (every field,
/// under the protocol's lowerCamelCase names, as the CLI's `--json` prints them), the dashboard with
/// ``DashboardSnapshot``; every refusal is
/// `{"error": {"code": "UNKNOWN_JOB", "message": "…"}}` with a 4xx or 5xx (``ErrorJSONMiddleware``).
struct Routes: Sendable {
    let server: CoordinatorServer
    let access: HTTPAccess
    let exporter: MetricsExporter
    let snapshots: RecentValue<DashboardSnapshot>

    func add(to router: Router<TributaryRequestContext>) {
        router.add(middleware: ErrorJSONMiddleware())
        router.add(middleware: AccessMiddleware(access: access))
        router.get("/healthz") { request, context in
            return Self.json(#"{"status":"ok"}"#)
        }
        router.get("/readyz") { request, context in
            guard server.isServing else {
                return Self.json(#"{"status":"not ready"}"#, status: .serviceUnavailable)
            }
            return Self.json(#"{"status":"ready"}"#)
        }
        router.get("/metrics") { request, context in
            let body = try await exporter.scrape(server)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        addAPI(to: router)
        addDashboard(to: router)
    }

    /// The JSON API: each route calls the handler a ZeroMQ client's request reaches, with the same checks.
    private func addAPI(to router: Router<TributaryRequestContext>) {
        let handlers = server.handlers
        router.get("/api/status") { request, context in
            return Self.json(try JobJSON.text(try await handlers.answer { handlers.status.status() }))
        }
        router.get("/api/jobs") { request, context in
            let query = request.uri.queryParameters
            let state = try query.get("state").flatMap { $0.isEmpty ? nil : try JobState(wire: $0) }
            let (batch, limit, before): (String?, Int?, Int64?) = (
                query.get("batch"), try Self.number(query.get("limit"), "limit"),
                try Self.number(query.get("before"), "before")
            )
            let jobs = try await handlers.answer {
                handlers.jobs.list(state: state, batch: batch, limit: limit, before: before)
            }
            return Self.json(try JobJSON.text(jobs))
        }
        router.get("/api/jobs/{id}") { request, context in
            let id = try Self.jobID(context)
            return Self.json(try JobJSON.text(try await handlers.answer { handlers.jobs.show(id) }))
        }
        router.post("/api/jobs/{id}/retry") { request, context in
            let id = try Self.jobID(context)
            return Self.json(try JobJSON.text(try await handlers.answer { try handlers.jobs.retry(id) }))
        }
        router.post("/api/jobs/{id}/cancel") { request, context in
            let id = try Self.jobID(context)
            return Self.json(try JobJSON.text(try await handlers.answer { try handlers.jobs.cancel(id) }))
        }
        router.delete("/api/jobs/{id}") { request, context in
            let id = try Self.jobID(context)
            return Self.json(try JobJSON.text(try await handlers.answer { try handlers.jobs.delete(id) }))
        }
        for action in QueueAction.allCases {
            router.post(RouterPath("/api/queues/{queue}/\(action.rawValue)")) { request, context in
                // As the page sends it (encodeURIComponent) or a client escapes it: `a%2Db` is the queue `a-b`.
                let raw = try context.parameters.require("queue")
                let name = raw.removingPercentEncoding ?? raw
                let queue = try await handlers.answer { try handlers.queues.act(action, on: name) }
                return Self.json(try JobJSON.text(queue))
            }
        }
        router.get("/api/batches/{batch}") { request, context in
            let batch = try context.parameters.require("batch")
            return Self.json(try JobJSON.text(try await handlers.answer { try handlers.batches.status(batch) }))
        }
        router.get("/api/subscribers") { request, context in
            return Self.json(try JobJSON.text(try await handlers.answer { handlers.subscribers.list() }))
        }
        router.get("/api/dashboard") { request, context in
            return try Self.json(Self.encode(try await snapshots.value()))
        }
        router.get("/api/events") { request, context in
            return events()
        }
    }

    private func addDashboard(to router: Router<TributaryRequestContext>) {
        // The files of Sources/Shared/HTTP/Dashboard/, embedded by SwiftPM (`.embedInCode` in Package.swift).
        for (path, type, bytes) in [
            ("/", "text/html; charset=utf-8", PackageResources.index_html),
            ("/dashboard.css", "text/css; charset=utf-8", PackageResources.dashboard_css),
            ("/dashboard.js", "text/javascript; charset=utf-8", PackageResources.dashboard_js),
        ] {
            let body = ByteBuffer(bytes: bytes)
            router.get(RouterPath(path)) { request, context in
                return Response(status: .ok, headers: Self.pageHeaders(type: type), body: .init(byteBuffer: body))
            }
        }
    }

    /// The page's files: not to be framed by another site (a framed page could be clicked through), nor taken
    /// for another type.
    private static func pageHeaders(type: String) -> HTTPFields {
        var headers: HTTPFields = [.contentType: type, .cacheControl: "no-cache"]
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("Content-Security-Policy")!] = "frame-ancestors 'none'"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return headers
    }

    /// Server-sent events: a `snapshot` event at once, then one a second, until the client goes or the service
    /// shuts down.
    private func events() -> Response {
        let snapshots = self.snapshots
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
            body: .init { writer in
                // Ends within a second of a graceful shutdown, so the server's stop does not wait on open pages.
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
                    let event: String
                    do {
                        let data = try Self.encode(try await snapshots.value())
                        event = "event: snapshot\ndata: \(data)\n\n"
                    } catch {
                        event = "event: failure\ndata: \(Self.errorJSON(error).text)\n\n"
                    }
                    try await writer.write(ByteBuffer(string: event))
                    do { try await Task.sleep(for: .seconds(1)) } catch { break }
                }
                try await writer.finish(nil)
            })
    }

    private static func jobID(_ context: TributaryRequestContext) throws -> Int64 {
        let text = try context.parameters.require("id")
        guard let id = Int64(text), id > 0 else {
            throw HTTPRefusal(.badRequest, "INVALID_REQUEST", "'\(text)' is not a job id (a positive integer)")
        }
        return id
    }

    private static func number<T: FixedWidthInteger>(_ text: String?, _ name: String) throws -> T? {
        guard let text else { return nil }
        guard let value = T(text), value >= 0 else {
            throw HTTPError(.badRequest, message: "'\(text)' is not a number for \(name)")
        }
        return value
    }

    /// The HTTP status and JSON body for a failed request.
    static func errorJSON(_ error: any Error) -> (status: HTTPResponse.Status, text: String) {
        let (status, code, message): (HTTPResponse.Status, String, String) =
            switch error {
            case let error as HTTPRefusal: (error.status, error.code, error.message)
            case let error as ProtocolError: (Self.status(for: error.codeName), error.codeName, error.message)
            case let error as StoreError:
                (Self.status(for: ProtocolError(error).codeName), ProtocolError(error).codeName, error.message)
            case let error as HTTPError:
                (
                    error.status, error.status == .notFound ? "NOT_FOUND" : "HTTP_\(error.status.code)",
                    error.body ?? error.status.reasonPhrase
                )
            default: (.internalServerError, "INTERNAL", "\(error)")
            }
        // Counted as a ZeroMQ client's refusal is: the request reached a handler, which refused it.
        if error is ProtocolError || error is StoreError {
            Counter(label: MetricNames.messagesRefused, dimensions: [("code", code)]).increment()
        }
        let body = ["error": ["code": code, "message": message]]
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data("{}".utf8)
        return (status, String(decoding: data, as: UTF8.self))
    }

    /// The HTTP status of a refusal named by its protocol error code (docs/protocol.md §6).
    private static func status(for code: String) -> HTTPResponse.Status {
        switch code {
        case "UNKNOWN_JOB": .notFound
        case "INVALID_REQUEST", "UNKNOWN_ENTITY", "WRONG_TYPE", "MALFORMED_FRAME", "UNKNOWN_MESSAGE": .badRequest
        case "SHUTTING_DOWN", "STORE_UNWRITABLE", "TOO_MANY_REQUESTS", "NOT_PRIMARY": .serviceUnavailable
        default: .internalServerError
        }
    }

    static func encode(_ snapshot: DashboardSnapshot) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(snapshot), as: UTF8.self)
    }

    static func json(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// A request refused by the endpoint itself (access, a malformed parameter): its HTTP status and error code.
struct HTTPRefusal: Error {
    let status: HTTPResponse.Status
    let code: String
    let message: String

    init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }
}

/// Answers every failed request, whatever threw, with `{"error": {"code", "message"}}` and its status.
struct ErrorJSONMiddleware: RouterMiddleware {
    typealias Context = TributaryRequestContext

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let (status, text) = Routes.errorJSON(error)
            return Routes.json(text, status: status)
        }
    }
}
