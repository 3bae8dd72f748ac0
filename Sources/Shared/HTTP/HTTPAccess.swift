import Foundation
import HTTPTypes
import Hummingbird

/// Who may do what on the HTTP endpoint (``HTTPEndpoint``'s rule), checked by each route.
///
/// Beside the token rule, two checks keep web pages of other sites out of a loopback endpoint: a request from
/// loopback must name a loopback host (`Host: 127.0.0.1:7402`, `localhost:7402`, `[::1]:7402`), which a DNS
/// rebinding attack cannot; and an action must carry `X-Tributary-Action: 1` (a page of another site cannot add
/// that header without the browser asking first, and this endpoint answers no such question) and no `Origin` of
/// another host.
struct HTTPAccess: Sendable {
    let token: String?

    /// What a request wants to do.
    enum Action {
        /// `/healthz`, `/readyz` and the dashboard's own files: open to anyone who can reach the port.
        case probe
        /// Reading: metrics, the JSON API, the dashboard's data.
        case read
        /// Changing state: retry, cancel, delete.
        case change
    }

    /// What of a request the rule looks at.
    struct Asked: Sendable {
        var fromLoopback: Bool
        /// The token it carries (header, or `?token=` on the event stream).
        var bearer: String?
        /// The host it names (`Host`), without the port.
        var host: String?
        /// The `Origin` header's host, when it has one.
        var originHost: String?
        /// Whether it carries `X-Tributary-Action`.
        var actionHeader: Bool

        init(
            fromLoopback: Bool, bearer: String? = nil, host: String? = "127.0.0.1", originHost: String? = nil,
            actionHeader: Bool = true
        ) {
            self.fromLoopback = fromLoopback
            self.bearer = bearer
            self.host = host
            self.originHost = originHost
            self.actionHeader = actionHeader
        }
    }

    /// The header an action must carry.
    static let actionHeader = HTTPField.Name("X-Tributary-Action")!

    /// Throws a 401 (no or a wrong token) or 403 (not allowed from where it came).
    func check(_ action: Action, _ request: Request, _ context: TributaryRequestContext) throws {
        let asked = Asked(
            fromLoopback: context.isFromLoopback, bearer: Self.bearer(request),
            host: request.head.authority.map(Self.hostWithoutPort),
            originHost: request.headers[.origin].flatMap { URL(string: $0)?.host },
            actionHeader: request.headers[Self.actionHeader] != nil)
        switch decide(action, asked) {
        case .allowed: return
        case .forbidden(let message): throw HTTPRefusal(.forbidden, "FORBIDDEN", message)
        case .unauthorized(let message): throw HTTPRefusal(.unauthorized, "UNAUTHORIZED", message)
        }
    }

    /// What becomes of a request.
    enum Decision: Equatable {
        case allowed
        /// 403: not allowed from where it came, whatever it carries.
        case forbidden(String)
        /// 401: a token is required and it carried none, or a wrong one.
        case unauthorized(String)
    }

    /// The rule: probes are open. An action needs `X-Tributary-Action` and no other site's `Origin`; with a token
    /// configured it needs the token wherever it comes from; without one, only from loopback. A read from loopback
    /// is open if it names a loopback host; from beyond, it needs the token when one is configured.
    func decide(_ action: Action, _ asked: Asked) -> Decision {
        if action == .probe { return .allowed }
        if asked.fromLoopback, let host = asked.host, !HTTPEndpoint.isLoopback(host: host) {
            return .forbidden("a request from this host must name it as 127.0.0.1, localhost or [::1] (Host: \(host))")
        }
        if action == .change {
            guard asked.actionHeader else {
                return .forbidden("an action needs the header X-Tributary-Action: 1 (the dashboard sends it)")
            }
            if let origin = asked.originHost, origin != asked.host {
                return .forbidden("an action from a page of another site (Origin host \(origin)) is refused")
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

    /// `host:port`, `[v6]:port` or `host` as the host alone (brackets off).
    static func hostWithoutPort(_ authority: String) -> String {
        if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<end])
        }
        return String(authority.split(separator: ":", maxSplits: 1).first ?? "")
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
