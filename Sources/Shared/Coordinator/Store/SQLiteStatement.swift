import Foundation
import GRDB
import GRDBSQLite
import TributaryCore

/// A prepared statement used through SQLite's C API on the root writer's hot path.
///
/// GRDB owns the connection, the schema and the reads; the merge loop binds and steps raw statements because
/// GRDB's argument arrays cost an allocation per call, and the merge makes several calls for every row.
/// A statement belongs to the connection it was prepared on and is used only inside that connection's writer
/// closures; call ``finalize()`` before the connection closes.
final class SQLiteStatement {
    private var handle: OpaquePointer?
    let connection: OpaquePointer
    let sql: String
    /// Where a failure meaning the store cannot be written is noted (the writer's statements); nil for others.
    private let fault: TransactionFault?

    init(connection: OpaquePointer, sql: String, fault: TransactionFault? = nil) throws {
        self.connection = connection
        self.sql = sql
        self.fault = fault
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw StoreError(
                .sqlite, String(cString: sqlite3_errmsg(connection)), sql: sql, sqliteCode: code)
        }
        handle = statement
    }

    deinit { finalize() }

    func finalize() {
        if let handle { sqlite3_finalize(handle) }
        handle = nil
    }

    // MARK: - Binding (1-based indexes, as in sqlite3_bind_*)

    func bindNull(_ index: Int32) { sqlite3_bind_null(handle, index) }
    /// How many parameters the statement takes.
    var parameterCount: Int32 { sqlite3_bind_parameter_count(handle) }
    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(handle, index, value) }

    func bind(_ index: Int32, _ value: String) {
        var value = value
        _ = value.withUTF8 { buffer in
            sqlite3_bind_text(handle, index, buffer.baseAddress, Int32(buffer.count), SQLITE_TRANSIENT)
        }
    }

    /// Binds `count` bytes at `offset` of `data` as a BLOB, copied by SQLite.
    func bind(_ index: Int32, bytes data: Data, offset: Int = 0, count: Int? = nil) {
        let count = count ?? data.count
        _ = data.withUnsafeBytes { buffer in
            sqlite3_bind_blob(handle, index, buffer.baseAddress.map { $0 + offset }, Int32(count), SQLITE_TRANSIENT)
        }
    }

    func bindRaw(_ index: Int32, _ buffer: UnsafeRawBufferPointer) {
        sqlite3_bind_blob(handle, index, buffer.baseAddress, Int32(buffer.count), SQLITE_TRANSIENT)
    }

    // MARK: - Stepping

    /// Runs the statement to completion and resets it.
    func execute() throws {
        defer { sqlite3_reset(handle) }
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW { code = sqlite3_step(handle) }
        guard code == SQLITE_DONE else { throw currentError(code) }
    }

    /// Runs an `INSERT` to completion and resets it; returns the row key of the row it inserted, nil when it
    /// inserted none (an upsert that updated a stored row instead leaves `last_insert_rowid` alone). Row keys are
    /// positive, so 0 marks "none" (SQLite keeps a trigger's inserts out of it).
    func executeInsert() throws -> Int64? {
        sqlite3_set_last_insert_rowid(connection, 0)
        try execute()
        let key = sqlite3_last_insert_rowid(connection)
        return key == 0 ? nil : key
    }

    /// Steps once; returns true if a row is available. Call ``reset()`` when done reading.
    func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(handle)
            throw currentError(code)
        }
    }

    func reset() { sqlite3_reset(handle) }

    /// The 16-byte BLOB in column `index` (0-based) of the current row as a UUID, read without allocating;
    /// nil when the column is not 16 bytes.
    func uuid(column index: Int32) -> UUID? {
        guard sqlite3_column_bytes(handle, index) == 16, let pointer = sqlite3_column_blob(handle, index) else {
            return nil
        }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: 16)) }
        return UUID(uuid: value)
    }

    /// The integer in column `index` of the current row.
    func int64(column index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    /// The number in column `index` of the current row.
    func double(column index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// The text in column `index` of the current row (its bytes, NULs included); nil for NULL.
    func text(column index: Int32) -> String? {
        guard sqlite3_column_type(handle, index) != SQLITE_NULL else { return nil }
        let count = Int(sqlite3_column_bytes(handle, index))
        guard count > 0, let pointer = sqlite3_column_text(handle, index) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The BLOB in column `index` of the current row, copied.
    func data(column index: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(handle, index))
        guard count > 0, let pointer = sqlite3_column_blob(handle, index) else { return Data() }
        return Data(bytes: pointer, count: count)
    }

    /// Binds `value`, or NULL.
    func bind(_ index: Int32, _ value: String?) {
        if let value { bind(index, value) } else { bindNull(index) }
    }

    /// The value in column `index` of the current row, copied (for the rare paths that compare stored values).
    func databaseValue(column index: Int32) -> DatabaseValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: return sqlite3_column_int64(handle, index).databaseValue
        case SQLITE_FLOAT: return sqlite3_column_double(handle, index).databaseValue
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(handle, index) else { return .null }
            return String(cString: text).databaseValue
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, index))
            guard count > 0, let pointer = sqlite3_column_blob(handle, index) else { return Data().databaseValue }
            return Data(bytes: pointer, count: count).databaseValue
        default: return .null
        }
    }

    /// Rows changed by the last statement on this connection.
    var changes: Int32 { sqlite3_changes(connection) }

    private func currentError(_ code: Int32) -> StoreError {
        let error = StoreFault.error(
            code: code, message: String(cString: sqlite3_errmsg(connection)), sql: sql,
            connection: connection)
        fault?.note(error)
        return error
    }
}

/// SQLite's "copy this buffer" destructor, which Swift cannot import as a constant.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

extension SQLiteStatement {
    /// Binds a UUID's 16 bytes as a BLOB without allocating.
    func bind(_ index: Int32, uuid: UUID) {
        withUnsafeBytes(of: uuid.uuid) { buffer in
            bindRaw(index, buffer)
        }
    }
}
