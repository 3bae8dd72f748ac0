import Foundation
import TributaryMessaging

/// The peers a coordinator with CURVE admits: one `.pub` file per peer in a folder (as `tributary keys generate`
/// writes them), each with its public key and its role. Reloaded on SIGHUP, so keys are added and revoked without a
/// restart.
public struct AllowList: Sendable {
    /// One admitted key.
    public struct Entry: Sendable, Hashable {
        /// The file's name without `.pub`: how logs and errors name the peer.
        public let name: String
        /// What the key may send (docs/security.md).
        public let role: CurveKeyFile.Role
    }

    /// Entries by public key (Z85).
    public let entries: [String: Entry]

    /// An allow-list of `entries`, by public key (Z85).
    public init(entries: [String: Entry] = [:]) {
        self.entries = entries
    }

    /// Reads every `*.pub` file of `directory`.
    /// - Throws: `KeyFileError` naming the folder, or a file without a valid public key or role.
    public static func load(directory: String) throws -> AllowList {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw KeyFileError("cannot read the allow-list folder \(directory): \(error.localizedDescription)")
        }
        var entries: [String: Entry] = [:]
        for file in names.sorted() where file.hasSuffix(".pub") {
            let path = (directory as NSString).appendingPathComponent(file)
            let fields = try CurveKeyFile.fields(of: path)
            guard let key = fields["public-key"], key.utf8.count == 40 else {
                throw KeyFileError("\(path) holds no valid public-key")
            }
            guard let roleName = fields["role"], let role = CurveKeyFile.Role(rawValue: roleName) else {
                throw KeyFileError("\(path) needs a role: worker, client or subscriber")
            }
            entries[key] = Entry(name: String(file.dropLast(".pub".count)), role: role)
        }
        return AllowList(entries: entries)
    }
}
