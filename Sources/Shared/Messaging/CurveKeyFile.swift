import Foundation
import ZeroMQ

/// The files that hold CURVE keys: `NAME.pub` (the public key and the role it is meant for; safe to copy to the
/// coordinator's allow-list folder) and `NAME.secret` (both keys; created with mode 0600, never printed).
///
/// Both are lines of `key = value`; `#` starts a comment:
/// ```
/// # Tributary CURVE public key "worker-1"
/// public-key = rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7
/// role = worker
/// ```
public enum CurveKeyFile {
    /// What a peer may do, given by its key's file in the coordinator's allow-list.
    public enum Role: String, Sendable, CaseIterable {
        /// Registers, takes jobs, sends change sets, fetches.
        case worker
        /// Pushes and manages jobs, asks status, fetches, follows the feed.
        case client
        /// Follows the feed and fetches; pushes nothing.
        case subscriber
    }

    /// Writes a new key pair as `directory/name.pub` and `directory/name.secret`, refusing to overwrite either.
    /// - Returns: the two paths and the public key.
    /// - Throws: ``KeyFileError`` naming the file at fault.
    public static func generate(in directory: String, name: String, role: Role) throws -> (
        publicPath: String, secretPath: String, publicKey: String
    ) {
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }), !name.hasPrefix(".")
        else {
            throw KeyFileError("the key name '\(name)' must be letters, digits, '-', '_' or '.', not starting with '.'")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let keys = try CurveKeyPair.generate()
        let publicPath = (directory as NSString).appendingPathComponent("\(name).pub")
        let secretPath = (directory as NSString).appendingPathComponent("\(name).secret")
        for path in [publicPath, secretPath] where FileManager.default.fileExists(atPath: path) {
            throw KeyFileError("\(path) exists; remove it or choose another --name")
        }
        try create(
            secretPath, mode: 0o600,
            contents:
                "# Tributary CURVE secret key \"\(name)\": keep it private (mode 0600)\npublic-key = \(keys.publicKey)\n"
                + "secret-key = \(keys.secretKey)\n")
        try create(
            publicPath, mode: 0o644,
            contents:
                "# Tributary CURVE public key \"\(name)\"\npublic-key = \(keys.publicKey)\nrole = \(role.rawValue)\n")
        return (publicPath, secretPath, keys.publicKey)
    }

    /// The `key = value` lines of a key file.
    /// - Throws: ``KeyFileError`` when it cannot be read or a line is not `key = value`.
    public static func fields(of path: String) throws -> [String: String] {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw KeyFileError("cannot read key file \(path): \(error.localizedDescription)")
        }
        var fields: [String: String] = [:]
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { throw KeyFileError("\(path) line \(number + 1) is not 'key = value'") }
            fields[parts[0].trimmingCharacters(in: .whitespaces)] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    /// Creates `path` with `mode` from the start (no window in which another user could open it) and writes it.
    private static func create(_ path: String, mode: mode_t, contents: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw KeyFileError("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        // The umask may have narrowed the mode; set it exactly.
        _ = fchmod(descriptor, mode)
        let bytes = Array(contents.utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { throw KeyFileError("cannot write \(path): \(String(cString: strerror(errno)))") }
            written += result
        }
    }
}

/// A key file that cannot be made or read, named.
public struct KeyFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
    package init(_ description: String) { self.description = description }
}
