import TributaryMessaging

/// A host and port as a request names them: the `Host` header, or the part of an `Origin` after its scheme.
///
/// Parsed strictly (RFC 3986 §3.2.2, RFC 9110 §7.2): a name of ASCII letters, digits, `-` and `.`, or an IPv6
/// address in brackets; then nothing, or `:` and a port of one to five digits (at most 65535). Anything else — a
/// second colon, a user part, a path, spaces, an empty name — is not an authority, so it matches nothing.
struct HTTPAuthority: Sendable, Equatable {
    /// The host, lowercased; an IPv6 address without its brackets.
    let name: String
    /// The port, when the authority names one.
    let port: Int?

    init(name: String, port: Int?) {
        self.name = name.lowercased()
        self.port = port
    }

    /// `text` parsed, or nil when it is not an authority as above.
    init?(_ text: some StringProtocol) {
        var rest = Substring(text)
        let name: Substring
        if rest.first == "[" {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            name = rest[rest.index(after: rest.startIndex)..<close]
            guard LoopbackHost.ipv6(name) != nil else { return nil }
            rest = rest[rest.index(after: close)...]
        } else {
            let end = rest.firstIndex(of: ":") ?? rest.endIndex
            name = rest[..<end]
            guard !name.isEmpty,
                name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") })
            else { return nil }
            rest = rest[end...]
        }
        var port: Int?
        if !rest.isEmpty {
            let digits = rest.dropFirst()
            guard rest.first == ":", (1...5).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                let number = Int(digits), number <= 65_535
            else { return nil }
            port = number
        }
        self.init(name: String(name), port: port)
    }

    /// Whether `origin` (an `Origin` header: `http://host:port`, RFC 6454) names this authority: the same name, and
    /// the same port, a `Host` without one meaning the default port of the origin's scheme (as it reaches this
    /// endpoint through a proxy for `https`). `null` and anything that is not an `http` or `https` origin match
    /// nothing.
    func isOrigin(_ origin: String) -> Bool {
        for (scheme, defaultPort) in [("http://", 80), ("https://", 443)] where origin.lowercased().hasPrefix(scheme) {
            guard let other = HTTPAuthority(origin.dropFirst(scheme.count)) else { return false }
            return other.name == name && (other.port ?? defaultPort) == (port ?? defaultPort)
        }
        return false
    }

    /// Whether the name is a loopback name or address (``LoopbackHost``).
    var isLoopback: Bool { LoopbackHost.contains(name) }
}
