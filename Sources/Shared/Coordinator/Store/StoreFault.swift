import Foundation
import GRDB
import GRDBSQLite
import TributaryCore

/// Tells apart the SQLite failures that mean the store cannot be written now (its disk is full, its file or
/// filesystem is read-only) from the rest, so that a write failing for one of them is refused with
/// ``StoreError/Code/unwritable``: rolled back whole, nothing of it done, to be tried again once the store can be
/// written.
///
/// A failed sync is not one of them: the commit's frames may be on the disk all the same, so its outcome is
/// unknown, and it stays an ordinary SQLite error.
enum StoreFault {
    /// Why the store cannot be written, for SQLite's result `code` on `connection`; nil when the failure is of
    /// another kind. Behind an I/O error, the operating system's error of the connection's last failed call may say
    /// (SQLite keeps it only when no later call failed); otherwise a file written beside the store tells whether
    /// its filesystem takes writes now.
    static func reason(code: Int32, connection: OpaquePointer?) -> String? {
        let systemError = connection.map { sqlite3_system_errno($0) } ?? 0
        return reason(code: code, systemError: systemError) {
            guard let connection, let path = sqlite3_db_filename(connection, "main") else { return nil }
            return probeWrite(beside: String(cString: path))
        }
    }

    /// Why the store cannot be written, for SQLite's result `code` and the operating system's error `systemError`
    /// (`probe` is asked when an I/O error does not say); nil when the failure is of another kind.
    ///
    /// Only failures that leave the commit undone count: a failed sync, and a failure to grow or map the
    /// shared-memory index (which comes after the commit's frames are written), leave its outcome unknown. Of the
    /// read-only codes only the plain one counts: a store file moved or deleted under the coordinator does not heal.
    static func reason(code: Int32, systemError: Int32, probe: () -> String? = { nil }) -> String? {
        switch code & 0xFF {
        case SQLITE_FULL:
            return systemError == EDQUOT ? "the disk quota of its filesystem is used up" : "its disk is full"
        case SQLITE_READONLY: return code == SQLITE_READONLY ? "its file is read-only" : nil
        case SQLITE_IOERR:
            guard !outcomeUnknown.contains(code) else { return nil }
            return reason(systemError: systemError) ?? probe()
        default: return nil
        }
    }

    /// The I/O errors after which a commit may have happened: SQLITE_IOERR_FSYNC, _DIR_FSYNC, _SHMOPEN, _SHMSIZE,
    /// _SHMMAP (C macros Swift does not import).
    static let outcomeUnknown: Set<Int32> = [4, 5, 18, 19, 21].reduce(into: []) { $0.insert(SQLITE_IOERR | ($1 << 8)) }

    /// Writes a byte to a new file beside `path`, then removes it: why that failed, when it failed for a full disk
    /// or a read-only filesystem; nil when it was written (or failed otherwise).
    static func probeWrite(beside path: String) -> String? {
        let probe = path + "-probe"
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return reason(systemError: errno) }
        defer {
            close(descriptor)
            unlink(probe)
        }
        var byte: UInt8 = 0
        return write(descriptor, &byte, 1) == 1 ? nil : reason(systemError: errno)
    }

    /// Why the store cannot be written, for the operating system's error `systemError`; nil for another error.
    static func reason(systemError: Int32) -> String? {
        switch systemError {
        case ENOSPC: "its disk is full"
        case EDQUOT: "the disk quota of its filesystem is used up"
        case EROFS: "its filesystem is read-only"
        default: nil
        }
    }

    /// The error for a statement that failed with SQLite's `code` and `message`.
    static func error(code: Int32, message: String, sql: String?, connection: OpaquePointer?) -> StoreError {
        if let reason = reason(code: code, connection: connection) {
            return StoreError(
                .unwritable, "the store cannot be written: \(reason) (\(message))", sql: sql, sqliteCode: code)
        }
        let kind: StoreError.Code = code & 0xFF == SQLITE_CONSTRAINT ? .constraint : .sqlite
        return StoreError(kind, message, sql: sql, sqliteCode: code)
    }

    /// `error` as ``StoreError/Code/unwritable`` when it is a GRDB error that means the store cannot be written;
    /// otherwise `error` itself.
    static func classify(_ error: any Error, connection: OpaquePointer?) -> any Error {
        guard let error = error as? DatabaseError,
            let reason = reason(code: error.extendedResultCode.rawValue, connection: connection)
        else { return error }
        return StoreError(
            .unwritable, "the store cannot be written: \(reason) (\(error.message ?? "\(error)"))", sql: error.sql,
            sqliteCode: error.extendedResultCode.rawValue)
    }
}
