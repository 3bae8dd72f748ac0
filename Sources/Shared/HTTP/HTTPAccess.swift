import Foundation
import Hummingbird

/// Who may do what on the HTTP endpoint (``HTTPEndpoint``'s rule), checked by each route.
struct HTTPAccess: Sendable {
    let token: String?

    /// What a request wants to do.
    enum Action {
        /// `/healthz`, `/readyz`: open to anyone who can reach the port (load balancers, systemd).
        case probe
        /// Reading: metrics, the JSON API, the dashboard.
        case read
        /// Changing state: retry, cancel, delete.
        case change
    }

    /// Throws a 401 (no or a wrong token) or 403 (an action from beyond loopback without a token configured).
    func check(_ action: Action, _ request: Request, _ context: TributaryRequestContext) throws {
        switch decide(action, fromLoopback: context.isFromLoopback, bearer: Self.bearer(request)) {
        case .allowed: return
        case .forbidden(let message): throw HTTPError(.forbidden, message: message)
        case .unauthorized(let message): throw HTTPError(.unauthorized, message: message)
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

    /// The rule: probes are open; loopback may do anything; beyond it, with a token configured every request must
    /// carry it, and without one reads are open and actions refused.
    func decide(_ action: Action, fromLoopback: Bool, bearer: String?) -> Decision {
        if action == .probe || fromLoopback { return .allowed }
        guard let token else {
            if action == .read { return .allowed }
            return .forbidden("actions that change state are taken from loopback only, or with --http-token")
        }
        guard let bearer, Self.same(bearer, token) else {
            return .unauthorized("a bearer token is required (Authorization: Bearer TOKEN)")
        }
        return .allowed
    }

    /// The token a request carries: `Authorization: Bearer …`, or the `token` query parameter (an EventSource
    /// cannot set headers).
    private static func bearer(_ request: Request) -> String? {
        if let header = request.headers[.authorization], header.hasPrefix("Bearer ") {
            return String(header.dropFirst("Bearer ".count))
        }
        return request.uri.queryParameters.get("token")
    }

    /// Compares in time independent of where the first difference is.
    private static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
