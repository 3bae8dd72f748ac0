import Foundation

/// Which host names and addresses stay on this host, matched exactly: `localhost` (in any case), an IPv4 address in
/// `127.0.0.0/8` written as four decimal numbers without leading zeros, and the IPv6 addresses `::1` and
/// `::ffff:127.x.y.z` (IPv6 without brackets, in any of its spellings).
///
/// Nothing else counts, not even the spellings some resolvers read as loopback (`127.1`, `0x7f.0.0.1`,
/// `2130706433`, `localhost.`): a strict match is what keeps a name such as `127.0.0.1.evil.example` out. The
/// coordinator's bind rules (``Endpoints/isLoopback(_:)``) and its HTTP endpoint's `Host` check both ask here.
public enum LoopbackHost {
    /// Whether `name` is one of the loopback names or addresses above.
    public static func contains(_ name: some StringProtocol) -> Bool {
        if name.lowercased() == "localhost" { return true }
        if let octets = ipv4(name) { return octets[0] == 127 }
        guard let bytes = ipv6(name) else { return false }
        let loopback = bytes.dropLast().allSatisfy { $0 == 0 } && bytes[15] == 1
        let mapped =
            bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
        return loopback || mapped
    }

    /// The four octets of `text` when it is an IPv4 address in dotted-decimal form (four numbers of 0 to 255, no
    /// leading zeros, no sign); nil for anything else.
    public static func ipv4(_ text: some StringProtocol) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }),
                part == "0" || !part.hasPrefix("0"), let octet = UInt8(part)
            else { return nil }
            octets.append(octet)
        }
        return octets
    }

    /// The sixteen bytes of `text` when it is an IPv6 address (without brackets or a zone), as `inet_pton(3)` reads
    /// it; nil for anything else.
    public static func ipv6(_ text: some StringProtocol) -> [UInt8]? {
        guard !text.isEmpty, text.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        var address = in6_addr()
        guard inet_pton(AF_INET6, String(text), &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }
}
