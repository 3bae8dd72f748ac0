import Foundation
import TributaryCore
import TributaryProtocol

/// `tributary backup --to FILE`: an online backup of the store, written on the coordinator's host inside its backup
/// directory, after the saves before the request, on a reader (the router goes on serving while it is copied).
package struct BackupHandler: Sendable {
    let parts: HandlerParts

    /// Backs the store up to `requested` (relative to the backup directory, or absolute inside it).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `INVALID_REQUEST` for a path outside the backup directory.
    package func backup(to requested: String) throws -> Promised<StoreBackup> {
        let store = parts.store
        let directory =
            parts.configuration.backupDirectory ?? URL(fileURLWithPath: store.path).deletingLastPathComponent().path
        let path = try Self.path(requested, in: directory)
        let logger = parts.logger
        return RequestPlace.afterSaves(parts) {
            let backup = try await store.backup(to: path)
            logger.notice(
                "store backed up",
                metadata: [
                    "path": "\(backup.path)", "bytes": "\(backup.bytes)", "last_seq": "\(backup.lastSeq)",
                    "seconds": "\(backup.seconds)",
                ])
            return backup
        }
    }

    /// The absolute path of a backup asked for as `requested` (relative to `directory`, or absolute).
    /// - Throws: ``/TributaryProtocol/ProtocolError`` `INVALID_REQUEST` when it is empty, names a directory, or lies
    ///   outside `directory` (after `..` and symbolic links are resolved).
    static func path(_ requested: String, in directory: String) throws -> String {
        guard !requested.isEmpty, !requested.contains("\0"), !requested.hasSuffix("/") else {
            throw ProtocolError(.invalidRequest, "a backup needs a file name (got '\(requested)')")
        }
        let root = URL(fileURLWithPath: directory).standardizedFileURL.resolvingSymlinksInPath().path
        let named =
            requested.hasPrefix("/")
            ? URL(fileURLWithPath: requested) : URL(fileURLWithPath: root).appendingPathComponent(requested)
        let standardized = named.standardizedFileURL
        let parent = standardized.deletingLastPathComponent().resolvingSymlinksInPath().path
        guard parent == root || parent.hasPrefix(root.hasSuffix("/") ? root : root + "/") else {
            throw ProtocolError(
                .invalidRequest,
                "\(requested) is outside the coordinator's backup directory \(root) (set with --backup-dir)")
        }
        return parent + "/" + standardized.lastPathComponent
    }
}
