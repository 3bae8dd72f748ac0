import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import TributaryCoordinator
import TributaryCore
import TributaryProtocol

/// A cluster's standby's HTTP endpoint (docs/failover.md, "Watching a cluster"), on the port the node serves as
/// primary: `/healthz` (the process is up), `/readyz` (503: it takes no requests, naming the primary),
/// `/api/status` (``StandbyStatus``) and `/metrics` (its replication, and the process's counters). Every other
/// path is refused `NOT_PRIMARY` (503) naming the primary, whose endpoint serves the API and the dashboard. The same
/// access rules as the primary's apply (`HTTPAccess`).
public struct StandbyHTTPService: Service {
    private let endpoint: HTTPEndpoint
    private let standby: StandbyState
    private let exporter: MetricsExporter
    private let logger: Logger
    private let listening: @Sendable (String) -> Void

    /// - Parameter listening: called with the endpoint's URL once the port is bound.
    public init(
        endpoint: HTTPEndpoint, standby: StandbyState, exporter: MetricsExporter, logger: Logger,
        listening: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.endpoint = endpoint
        self.standby = standby
        self.exporter = exporter
        self.logger = logger
        self.listening = listening
    }

    public func run() async throws {
        let router = Router(context: TributaryRequestContext.self)
        let (standby, exporter) = (self.standby, self.exporter)
        router.add(middleware: ErrorJSONMiddleware())
        router.add(middleware: AccessMiddleware(access: HTTPAccess(token: endpoint.token)))
        router.add(middleware: NotPrimaryMiddleware(standby: standby))
        router.get("/healthz") { request, context in
            return Routes.json(#"{"status":"ok"}"#)
        }
        router.get("/readyz") { request, context in
            let primary = standby.status().primary
            let body = ["status": "standby", "primary": primary.name, "endpoint": primary.endpoint]
            return Routes.json(try Self.text(body), status: .serviceUnavailable)
        }
        router.get("/api/status") { request, context in
            return Routes.json(try Self.text(standby.status()))
        }
        router.get("/metrics") { request, context in
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: exporter.scrape(standby: standby))))
        }
        let app = endpoint.application(
            router: router, serving: "standby's HTTP endpoint serving", logger: logger, listening: listening)
        try await app.run()
    }

    /// `value` as the API writes JSON.
    static func text(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// Refuses every path the standby does not serve `NOT_PRIMARY` (503), naming the primary, rather than 404: the path
/// exists, on the primary (the API, the dashboard).
private struct NotPrimaryMiddleware: RouterMiddleware {
    typealias Context = TributaryRequestContext
    let standby: StandbyState

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let status = standby.status()
            throw ProtocolError(
                .notPrimary,
                "'\(status.node)' is a standby of the cluster '\(status.cluster)': its primary '\(status.primary.name)' (\(status.primary.endpoint)) serves \(request.uri.path)"
            )
        }
    }
}
