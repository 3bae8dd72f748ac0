import Foundation
import TributaryCore
import TributaryProtocol

/// `tributary backup --to FILE`: an online backup of the store, written on the coordinator's host inside its backup
/// directory, on a reader (the router goes on serving while it is copied).
extension CoordinatorServer {
    func backup(_ request: Tributary_V1_BackupRequest, from peer: Data, requestID: UInt64) throws {
        let directory =
            configuration.backupDirectory ?? URL(fileURLWithPath: store.path).deletingLastPathComponent().path
        let path = try Self.backupPath(request.path, in: directory)
        let (store, logger) = (self.store, self.logger)
        try readAfterSaves(peer: peer, requestID: requestID) {
            let backup = try await store.backup(to: path)
            logger.notice(
                "store backed up",
                metadata: [
                    "path": "\(backup.path)", "bytes": "\(backup.bytes)", "last_seq": "\(backup.lastSeq)",
                    "seconds": "\(backup.seconds)",
                ])
            return .backupReply(
                .with {
                    $0.path = backup.path
                    $0.bytes = backup.bytes
                    $0.lastSeq = backup.lastSeq
                    $0.seconds = backup.seconds
                })
        }
    }

    /// The absolute path of a backup asked for as `requested` (relative to `directory`, or absolute).
    /// - Throws: ``ProtocolError`` `INVALID_REQUEST` when it is empty, names a directory, or lies outside
    ///   `directory` (after `..` and symbolic links are resolved).
    static func backupPath(_ requested: String, in directory: String) throws -> String {
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
