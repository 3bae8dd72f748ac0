import Foundation
import GRDB
import TributaryCore

/// A backup written by ``RootStore/backup(to:)``.
public struct StoreBackup: Sendable, Equatable {
    /// Where it is (absolute).
    public var path: String
    /// Its size.
    public var bytes: UInt64
    /// The last commit it holds.
    public var lastSeq: UInt64
    /// How long it took to make, in seconds.
    public var seconds: Double
}

/// Online backups: a consistent copy of the store written while the coordinator serves.
extension RootStore {
    /// Copies the store as of one commit into a new file at `path` with SQLite's `VACUUM INTO`, run on a reader
    /// connection (one read transaction: commits go on meanwhile, and the copy holds none of them half). The copy is
    /// written beside `path` under a temporary name, synced, and then linked to `path`, so `path` appears only
    /// complete and an existing file is never replaced.
    /// - Throws: ``/TributaryCore/StoreError`` (`invalidRequest`) naming the path when it exists or its directory does
    ///   not; nothing is left behind then.
    public func backup(to path: String) async throws -> StoreBackup {
        let started = ContinuousClock.now
        // The file system's calls (checks, the copy's sync and link) wait on the disk: off the cooperative pool.
        let temporary = try await BlockingWork.run { try Self.temporaryBackupPath(for: path) }
        do {
            try await pool.unsafeRead { db in try db.execute(sql: "VACUUM INTO ?", arguments: [temporary]) }
        } catch {
            await BlockingWork.run { _ = unlink(temporary) }
            throw StoreError(.sqlite, "cannot back up to \(path): \(error)")
        }
        let (bytes, lastSeq) = try await BlockingWork.run {
            defer { unlink(temporary) }
            return try Self.complete(temporary, as: path)
        }
        let elapsed = ContinuousClock.now - started
        return StoreBackup(
            path: path, bytes: bytes, lastSeq: lastSeq,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// Where a backup to `path` is written before it is complete: beside it, under a name of its own.
    /// - Throws: ``/TributaryCore/StoreError`` (`invalidRequest`) when `path` exists or its directory does not.
    private static func temporaryBackupPath(for path: String) throws -> String {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw StoreError(.invalidRequest, "cannot back up to \(path): the directory \(directory) does not exist")
        }
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreError(
                .invalidRequest, "cannot back up to \(path): the file exists (a backup never replaces one)")
        }
        return "\(directory)/.\(url.lastPathComponent).\(UUID().uuidString).partial"
    }

    /// Syncs the copy at `temporary` and links it to `path`, so that `path` appears only complete.
    /// - Returns: its size and the last commit it holds.
    private static func complete(_ temporary: String, as path: String) throws -> (bytes: UInt64, lastSeq: UInt64) {
        let lastSeq = try lastSequenceNumber(ofFileAt: temporary)
        try sync(temporary)
        guard link(temporary, path) == 0 else {
            let reason =
                errno == EEXIST ? "the file exists (a backup never replaces one)" : String(cString: strerror(errno))
            throw StoreError(.invalidRequest, "cannot back up to \(path): \(reason)")
        }
        try sync(URL(fileURLWithPath: path).deletingLastPathComponent().path)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? 0
        return (bytes, lastSeq)
    }

    private static func lastSequenceNumber(ofFileAt path: String) throws -> UInt64 {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: path, configuration: configuration).read { try FeedStore.lastSequenceNumber($0) }
    }

    /// Flushes a file (or a directory's entries) to the disk.
    private static func sync(_ path: String) throws {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0, fsync(fd) == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { Glibc.close(fd) }
            throw StoreError(.sqlite, "cannot sync \(path): \(reason)")
        }
        Glibc.close(fd)
    }
}
