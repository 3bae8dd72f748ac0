import Foundation
import GRDB
import GRDBSQLite
import Testing
import TributaryProtocol

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo

/// How the writer tells a store that cannot be written from other failures, and how long the fault stands. The full
/// disk here is SQLite's own (`max_page_count` caps the file, and SQLite answers SQLITE_FULL past it); a real one is
/// in `StoreFilesystemTests`.
@Suite("Store faults: a full store refused as unwritable, and when the fault ends")
struct StoreFaultTests {
    @Test(
        "a push into a store at its size limit is refused as unwritable naming the full disk, writes nothing, and once room is made the next one commits"
    )
    func fullStoreRefusesPush() async throws {
        let temporary = try TemporaryStore(modelJSON: DemoData.modelJSON)
        let store = temporary.store
        let pages = try await store.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0 }
        try await store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA max_page_count = \(pages)") }
        let large = JobSpec(kind: "noop", payload: Data(repeating: 7, count: 256 * 1024), uniqueKey: "large")
        switch await store.saves.queuePush([large], batch: "b1").value {
        case .success: Issue.record("a push past the store's size limit was taken")
        case .failure(let error):
            let error = try #require(error as? StoreError)
            #expect(error.code == .unwritable)
            #expect(error.message.contains("disk is full"), "\(error)")
            #expect(ProtocolError(error).code == .storeUnwritable)
        }
        #expect(store.writer.writability.fault()?.reason == "its disk is full (database or disk is full)")
        let queued = try await store.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tributary_jobs") ?? -1
        }
        #expect(queued == 0, "nothing of the refused push was written")

        try await store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA max_page_count = 1000000") }
        guard case .success = await store.saves.queuePush([large], batch: "b2").value else {
            Issue.record("the push after room was made failed")
            return
        }
        let later = ContinuousClock.now + StoreWritability.settleTime
        #expect(store.writer.writability.fault(at: later) == nil, "writes commit again and none was refused since")
        try store.close()
    }

    @Test(
        "a fault stands from the first refusal until a write commits with none refused for the settle time; each change is reported once"
    )
    func faultSettles() {
        let writability = StoreWritability()
        let start = ContinuousClock.now
        #expect(writability.check(now: start) == nil)
        writability.refused("its disk is full", now: start)
        guard case .unwritable(let fault) = writability.check(now: start) else {
            Issue.record("the fault was not reported")
            return
        }
        #expect(fault.reason == "its disk is full" && fault.refused == 1)
        #expect(writability.check(now: start) == nil, "reported once")
        // A small write fits, the next is refused: the fault stands throughout.
        writability.written(now: start + .seconds(1))
        #expect(writability.fault(at: start + .seconds(2)) != nil)
        writability.refused("its disk is full", now: start + .seconds(3))
        writability.written(now: start + .seconds(4))
        #expect(
            writability.fault(at: start + .seconds(12))?.refused == 2, "10 s since the last refusal have not passed")
        #expect(writability.check(now: start + .seconds(12)) == nil)
        // Writes commit and none is refused for 10 s: over, reported once.
        #expect(writability.fault(at: start + .seconds(13)) == nil)
        guard case .writable(let after) = writability.check(now: start + .seconds(13)) else {
            Issue.record("the end of the fault was not reported")
            return
        }
        #expect(after.refused == 2)
        #expect(writability.check(now: start + .seconds(14)) == nil)
        // Without a write since the last refusal, time alone does not end it.
        writability.refused("its filesystem is read-only", now: start + .seconds(20))
        #expect(writability.fault(at: start + .seconds(90))?.reason == "its filesystem is read-only")
    }

    @Test(
        "SQLite's codes: a full disk, a read-only file and a read-only filesystem are unwritable; a failed sync, a failed shared-memory index and a moved file are not"
    )
    func classification() {
        let ioErrorWrite = SQLITE_IOERR | (3 << 8)
        let ioErrorFsync = SQLITE_IOERR | (4 << 8)
        let ioErrorShmSize = SQLITE_IOERR | (19 << 8)
        let readOnlyMoved = SQLITE_READONLY | (4 << 8)
        #expect(StoreFault.reason(code: SQLITE_FULL, systemError: 0) == "its disk is full")
        #expect(
            StoreFault.reason(code: SQLITE_FULL, systemError: EDQUOT) == "the disk quota of its filesystem is used up")
        #expect(StoreFault.reason(code: SQLITE_READONLY, systemError: 0) == "its file is read-only")
        #expect(StoreFault.reason(code: readOnlyMoved, systemError: 0) == nil, "a moved store file does not heal")
        #expect(StoreFault.reason(code: ioErrorWrite, systemError: EROFS) == "its filesystem is read-only")
        #expect(StoreFault.reason(code: ioErrorWrite, systemError: ENOSPC) == "its disk is full")
        #expect(StoreFault.reason(code: ioErrorWrite, systemError: EIO) == nil)
        #expect(
            StoreFault.reason(code: ioErrorWrite, systemError: 0) { "its filesystem is read-only" } != nil,
            "an I/O error without its cause asks the probe")
        #expect(StoreFault.reason(code: ioErrorFsync, systemError: ENOSPC) == nil, "after a failed sync: unknown")
        #expect(StoreFault.reason(code: ioErrorShmSize, systemError: ENOSPC) == nil, "after the frames: unknown")
        #expect(StoreFault.reason(code: SQLITE_CONSTRAINT, systemError: 0) == nil)
    }

    @Test(
        "a write after SQLite rolled the transaction back for a full disk is refused as unwritable, not as a bare rollback"
    )
    func rolledBackByFullDisk() async throws {
        let temporary = try TemporaryStore(modelJSON: DemoData.modelJSON)
        let store = temporary.store
        let error = try await store.pool.writeWithoutTransaction { db -> (any Error)? in
            try db.execute(sql: "CREATE TABLE fault_test (x BLOB)")
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            try db.execute(sql: "PRAGMA max_page_count = \(pages)")
            defer { try? db.execute(sql: "PRAGMA max_page_count = 1000000") }
            do {
                try store.writer.statements.transaction(db) {
                    let insert = try store.writer.statements.statement(db, "INSERT INTO fault_test (x) VALUES (?)")
                    insert.bind(1, bytes: Data(repeating: 1, count: 512 * 1024))
                    #expect(throws: StoreError.self) { try insert.execute() }
                    // SQLite rolled the whole transaction back for the full store: what comes after finds none.
                    #expect(sqlite3_get_autocommit(db.sqliteConnection) != 0)
                    try store.writer.statements.requireTransaction(db)
                }
                return nil
            } catch {
                return error
            }
        }
        let refused = try #require(error as? StoreError)
        #expect(refused.code == .unwritable, "\(refused)")
        #expect(store.writer.writability.fault() != nil)
        try store.close()
    }

    @Test("a commit that changes nothing (an empty check) does not end a fault; one that writes does")
    func emptyCommitsSayNothing() async throws {
        let temporary = try TemporaryStore(modelJSON: DemoData.modelJSON)
        let store = temporary.store
        let writability = store.writer.writability
        writability.refused("its disk is full", now: .now - StoreWritability.settleTime * 2)
        try await store.pool.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE TABLE fault_test (x BLOB)")
            try store.writer.statements.transaction(db) {
                _ = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM fault_test")
            }
        }
        #expect(writability.fault() != nil, "nothing was written: nothing says the disk has room")
        try await store.pool.writeWithoutTransaction { db in
            try store.writer.statements.transaction(db) { try db.execute(sql: "INSERT INTO fault_test (x) VALUES (1)") }
        }
        #expect(writability.fault() == nil, "a write committed, the last refusal long ago")
        try store.close()
    }
}
