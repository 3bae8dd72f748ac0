import Foundation
import TributaryMessaging

/// Where the coordinator's HTTP endpoint listens and who may use it: `--http HOST:PORT` (port `*` or 0 picks a
/// free one; `off` disables it), `--http-token FILE`, `--insecure`.
///
/// The same safe-by-default rule as the ZeroMQ sockets: beyond loopback it needs a bearer token or `--insecure`.
/// With a token, every request from beyond loopback must carry it (`Authorization: Bearer …`, or `?token=…`,
/// which the dashboard's event stream needs) except `/healthz`, `/readyz` and the dashboard's own files; without one (`--insecure`), reads are open and
/// actions that change state (retry, cancel, delete) are taken from loopback only.
public struct HTTPEndpoint: Sendable, Equatable {
    public var host: String
    /// 0 picks a free port.
    public var port: Int
    /// The bearer token; nil for none.
    public var token: String?

    /// The default endpoint: loopback, port 7402.
    public static let defaultEndpoint = "127.0.0.1:7402"

    public init(host: String, port: Int, token: String? = nil) {
        self.host = host
        self.port = port
        self.token = token
    }

    /// Parses `HOST:PORT` (`[v6]:PORT` for IPv6); nil for `off`.
    /// - Throws: ``HTTPEndpointError`` naming what is wrong with `text`.
    public static func parse(_ text: String) throws -> HTTPEndpoint? {
        if text == "off" { return nil }
        guard let colon = text.lastIndex(of: ":") else {
            throw HTTPEndpointError("--http '\(text)' is not HOST:PORT (e.g. \(defaultEndpoint)) or off")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw HTTPEndpointError("--http '\(text)' names no host (e.g. \(defaultEndpoint))") }
        let port: Int
        if portText == "*" {
            port = 0
        } else if let number = Int(portText), (0...65_535).contains(number) {
            port = number
        } else {
            throw HTTPEndpointError("--http '\(text)': the port must be 0 to 65535 or *")
        }
        return HTTPEndpoint(host: host, port: port)
    }

    /// Whether the endpoint listens on loopback only.
    public var isLoopback: Bool { Self.isLoopback(host: host) }

    /// Whether `host` (a name or an address) is loopback.
    public static func isLoopback(host: String) -> Bool {
        LoopbackHost.contains(host)
    }

    /// Why the endpoint may not be used as configured, or nil: beyond loopback it needs a token or `insecure`.
    public func refusal(insecure: Bool) -> String? {
        guard !isLoopback, token == nil, !insecure else { return nil }
        return "--http \(host):\(port) is beyond loopback: give a bearer token file (--http-token FILE) "
            + "or --insecure to serve it without one"
    }

    /// Reads a bearer token from its file (the first line, trimmed).
    /// - Throws: ``HTTPEndpointError`` when the file cannot be read or holds no token.
    public static func readToken(file path: String) throws -> String {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw HTTPEndpointError("--http-token \(path): cannot read the token file (\(error.localizedDescription))")
        }
        let token =
            text.split(whereSeparator: \.isNewline).first.map {
                $0.trimmingCharacters(in: .whitespaces)
            } ?? ""
        guard token.count >= 16 else {
            throw HTTPEndpointError("--http-token \(path): the token must be one line of at least 16 characters")
        }
        return token
    }
}

/// What is wrong with an HTTP endpoint's configuration.
public struct HTTPEndpointError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
