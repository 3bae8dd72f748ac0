import Foundation
import HTTPTypes
import Hummingbird

/// Who may do what on the HTTP endpoint (``HTTPEndpoint``'s rule), checked for every request before any route runs
/// (``AccessMiddleware``).
///
/// Beside the token rule, three checks keep web pages of other sites out of a loopback endpoint:
/// - a request must carry one well-formed `Host` (``HTTPAuthority``), and one from loopback must name a loopback
///   host exactly (`127.0.0.1:7402`, `localhost:7402`, `[::1]:7402`; ``LoopbackHost``), which a page on a
///   rebound domain (DNS rebinding) cannot;
/// - an action must carry `X-Tributary-Action: 1` (a page of another site cannot add that header without the
///   browser asking first, and this endpoint answers no such question);
/// - an action's `Origin`, when it has one, must be this endpoint's own (same host and port); `Origin: null`, which
///   sandboxed frames and `file:` pages send, is refused.
struct HTTPAccess: Sendable {
    let token: String?

    /// What a request wants to do.
    enum Action {
        /// `/healthz`, `/readyz` and the dashboard's own files: open to anyone who can reach the port.
        case probe
        /// Reading: metrics, the JSON API, the dashboard's data.
        case read
        /// Changing state: retry, cancel, delete, a queue's pause or resume.
        case change
    }

    /// What of a request the rule looks at, as the request carries it.
    struct Asked: Sendable {
        var fromLoopback: Bool
        /// The token it carries (header, or `?token=` on the event stream).
        var bearer: String?
        /// The `Host` header's value; nil when it has none.
        var host: String?
        /// Whether it carries more than one `Host` header.
        var repeatedHost: Bool
        /// The `Origin` header's value, when it has one.
        var origin: String?
        /// The `X-Tributary-Action` header's value, when it has one.
        var actionHeader: String?

        init(
            fromLoopback: Bool, bearer: String? = nil, host: String? = "127.0.0.1:7402", repeatedHost: Bool = false,
            origin: String? = nil, actionHeader: String? = "1"
        ) {
            self.fromLoopback = fromLoopback
            self.bearer = bearer
            self.host = host
            self.repeatedHost = repeatedHost
            self.origin = origin
            self.actionHeader = actionHeader
        }
    }

    /// The header an action must carry.
    static let actionHeader = HTTPField.Name("X-Tributary-Action")!
    /// A second `Host` header: HTTP/1 puts the first in the request's authority and leaves the rest among the fields.
    private static let hostHeader = HTTPField.Name("Host")!

    /// What a request wants to do, from its method and path: the probes and the page's files are read with `GET`;
    /// every other `GET` or `HEAD` reads; every other method changes state.
    static func action(of request: Request) -> Action {
        guard request.method == .get || request.method == .head else { return .change }
        return probePaths.contains(request.uri.path) ? .probe : .read
    }

    /// The paths open to anyone who can reach the port.
    static let probePaths: Set<String> = ["/healthz", "/readyz", "/", "/dashboard.css", "/dashboard.js"]

    /// Throws a 400 (no `Host`, or one that is not a host), 401 (no or a wrong token) or 403 (not allowed from
    /// where it came, or without what an action must carry).
    func check(_ request: Request, _ context: TributaryRequestContext) throws {
        let asked = Asked(
            fromLoopback: context.isFromLoopback, bearer: Self.bearer(request), host: request.head.authority,
            repeatedHost: request.headers[Self.hostHeader] != nil, origin: request.headers[.origin],
            actionHeader: request.headers[Self.actionHeader])
        switch decide(Self.action(of: request), asked) {
        case .allowed: return
        case .badRequest(let message): throw HTTPRefusal(.badRequest, "INVALID_REQUEST", message)
        case .forbidden(let message): throw HTTPRefusal(.forbidden, "FORBIDDEN", message)
        case .unauthorized(let message): throw HTTPRefusal(.unauthorized, "UNAUTHORIZED", message)
        }
    }

    /// What becomes of a request.
    enum Decision: Equatable {
        case allowed
        /// 400: the request names no host, more than one, or something that is not a host.
        case badRequest(String)
        /// 403: not allowed from where it came, whatever it carries.
        case forbidden(String)
        /// 401: a token is required and it carried none, or a wrong one.
        case unauthorized(String)
    }

    /// The rule: probes are open. Anything else needs one well-formed `Host`, a loopback one from loopback. An
    /// action needs `X-Tributary-Action: 1` and no `Origin` but the endpoint's own; with a token configured it needs
    /// the token wherever it comes from; without one, only from loopback. A read from loopback is open; from beyond,
    /// it needs the token when one is configured.
    func decide(_ action: Action, _ asked: Asked) -> Decision {
        if action == .probe { return .allowed }
        guard !asked.repeatedHost else { return .badRequest("a request must carry one Host header, not several") }
        guard let named = asked.host, !named.isEmpty else {
            return .badRequest("a request must name its host (Host: 127.0.0.1:PORT)")
        }
        guard let host = HTTPAuthority(named) else {
            return .badRequest("Host: \(Self.quoted(named)) is not a host name or address with an optional port")
        }
        if asked.fromLoopback, !host.isLoopback {
            return .forbidden(
                "a request from this host must name it as 127.0.0.1, localhost or [::1] (Host: \(Self.quoted(named)))")
        }
        if action == .change {
            guard asked.actionHeader?.trimmingCharacters(in: .whitespaces) == "1" else {
                return .forbidden("an action needs the header X-Tributary-Action: 1 (the dashboard sends it)")
            }
            if let origin = asked.origin, !host.isOrigin(origin) {
                return .forbidden(
                    "an action from a page of another origin is refused (Origin: \(Self.quoted(origin)), "
                        + "Host: \(Self.quoted(named)))")
            }
            if token == nil {
                return asked.fromLoopback
                    ? .allowed
                    : .forbidden("actions that change state are taken from loopback only, or with --http-token")
            }
        } else if asked.fromLoopback || token == nil {
            return .allowed
        }
        guard let token, let bearer = asked.bearer, Self.same(bearer, token) else {
            return .unauthorized("a bearer token is required (Authorization: Bearer TOKEN)")
        }
        return .allowed
    }

    /// A header's value as an error message quotes it: at most 100 characters.
    private static func quoted(_ value: String) -> String {
        value.count > 100 ? String(value.prefix(100)) + "…" : value
    }

    /// The token a request carries: `Authorization: Bearer …`; or, for the dashboard's event stream only (an
    /// EventSource cannot set headers), the `token` query parameter.
    private static func bearer(_ request: Request) -> String? {
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") {
            return String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
        }
        guard request.method == .get, request.uri.path == "/api/events" else { return nil }
        return request.uri.queryParameters.get("token").map { String($0) }
    }

    /// Compares in time independent of where the first difference is.
    private static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Applies ``HTTPAccess`` to every request before any route runs, so no route can be reached without it.
struct AccessMiddleware: RouterMiddleware {
    typealias Context = TributaryRequestContext
    let access: HTTPAccess

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        try access.check(request, context)
        return try await next(request, context)
    }
}
