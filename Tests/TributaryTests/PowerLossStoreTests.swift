import CPowerLoss
import Foundation
import GRDBSQLite
import Testing

@testable import TributaryCoordinator
@testable import TributaryCore
@testable import TributaryDemo

extension PowerLossTests {
    /// The root store through a power loss (the VFS of Sources/CPowerLoss, checked by ``PowerLossTests/HarnessTests``): pushes
    /// and view-context saves through the store's write path, the power lost at operations spread over the run, the
    /// unsynced writes dropped at random (some torn), the store opened again as a coordinator opens it. At `full` every
    /// acknowledged push and save is there; at either level every acknowledged push is, the file is intact, and each save
    /// is there whole (its object and its history record) or not at all.
    @Suite("Power loss: the root store at each durability level")
    struct StoreTests {
        let directory = try! TemporaryDirectory()
        static let steps = 40
        /// Crash points per level: 30, or `TRIBUTARY_CRASH_POINTS` (`make crash-test` runs hundreds).
        static let crashPoints = ProcessInfo.processInfo.environment["TRIBUTARY_CRASH_POINTS"].flatMap(Int.init) ?? 30

        init() {
            #expect(power_loss_register() == SQLITE_OK)
        }

        /// What was acknowledged before the power was lost.
        struct Acknowledged {
            var pushes: [String] = []
            var saves: [String] = []
            /// The last acknowledged save's commit, as a subscriber saw it published.
            var lastSave: FeedPosition?
        }

        /// Pushes (odd steps) and saves (even steps) until one fails, the power lost at `crashPoint` (nil: never).
        func run(_ durability: Durability, crashPoint: Int64?, path: String) async throws -> (Acknowledged, Int64) {
            let store = try RootStore.open(path: path, model: DemoData.model, durability: durability)
            let start = power_loss_operations()
            if let crashPoint { power_loss_arm(crashPoint) }
            var acknowledged = Acknowledged()
            steps: for step in 1...Self.steps {
                if step % 2 == 1 {
                    let batch = "batch-\(step)"
                    switch await store.saves.queuePush([JobSpec(kind: "noop")], batch: batch).value {
                    case .success: acknowledged.pushes.append(batch)
                    case .failure: break steps
                    }
                } else {
                    let login = "user-\(step)"
                    let context = ObjectContext(model: DemoData.model, parent: LocalRootParent(store: store), name: "c")
                    do {
                        try await context.perform { context in
                            try context.insert("User")["login"] = .string(login)
                        }
                        let receipt = try await context.save()
                        acknowledged.saves.append(login)
                        acknowledged.lastSave = FeedPosition(seq: receipt.seq, epoch: store.writer.epoch)
                    } catch {
                        break steps
                    }
                }
            }
            let operations = power_loss_operations() - start
            try? store.close()
            return (acknowledged, operations)
        }

        /// The first column of every row `sql` gives on the store at `path`, as text.
        func strings(_ path: String, _ sql: String) throws -> [String] {
            var db: OpaquePointer?
            guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw HarnessError("cannot open \(path)") }
            defer { sqlite3_close_v2(db) }
            return try PowerLossTests.strings(db, sql)
        }

        /// Runs at crash points spread over an uncrashed run and checks each store after the loss; returns how many
        /// acknowledged saves were lost in all.
        func crashes(_ durability: Durability) async throws -> Int {
            power_loss_watch(directory.url.path)
            defer { power_loss_watch(nil) }
            let (whole, operations) = try await run(
                durability, crashPoint: nil, path: directory.path("\(durability)-whole.sqlite"))
            #expect(whole.pushes.count + whole.saves.count == Self.steps)
            var lostSaves = 0
            var checked = 0
            var rewritesFound = 0
            let points = Self.crashPoints
            for index in 0..<points {
                let path = directory.path("\(durability)-\(index).sqlite")
                let (acknowledged, _) = try await run(
                    durability, crashPoint: operations * Int64(index) / Int64(points), path: path)
                #expect(power_loss_apply(UInt32(index + 1), 20) >= 0)
                let point = "\(durability), crash point \(index)"
                #expect(try strings(path, "PRAGMA integrity_check") == ["ok"], "\(point)")
                guard try !strings(path, "SELECT name FROM sqlite_master WHERE name = 'tributary_jobs'").isEmpty else {
                    // At normal the store's creation is not synced: lost with everything after it, before anything was
                    // acknowledged (the first synced commit syncs the log before it).
                    #expect(
                        acknowledged.pushes.isEmpty && acknowledged.saves.isEmpty, "\(point): a store without tables")
                    continue
                }
                let batches = Set(try strings(path, "SELECT batch FROM tributary_jobs"))
                #expect(Set(acknowledged.pushes).isSubset(of: batches), "\(point): an acknowledged push was lost")
                let logins = try strings(path, "SELECT login FROM User")
                let history = try strings(path, "SELECT seq FROM tributary_history ORDER BY seq").compactMap { Int($0) }
                #expect(logins.count == history.count, "\(point): each save whole: its object and its record")
                #expect(history == (0..<history.count).map { $0 + 1 }, "\(point): the history a gap-free prefix")
                lostSaves += Set(acknowledged.saves).subtracting(logins).count
                checked += acknowledged.pushes.count + acknowledged.saves.count
                // A coordinator opens what is left. A subscriber that saw the last acknowledged save reads on when the
                // store kept it, and is told the feed was rewritten from the first lost seq when it did not.
                power_loss_watch(nil)
                let reopened = try RootStore.open(path: path, model: DemoData.model, durability: durability)
                if let seen = acknowledged.lastSave {
                    var query = FeedStore.HistoryQuery(after: seen.seq)
                    query.afterEpoch = seen.epoch
                    let kept = history.contains(Int(seen.seq))
                    do {
                        _ = try await reopened.feed.history(query)
                        #expect(kept, "\(point): a lost commit's position read on")
                    } catch let error as StoreError where error.code == .feedRewritten {
                        #expect(!kept && error.seq == UInt64(history.count + 1), "\(point): \(error)")
                        rewritesFound += 1
                    }
                }
                try reopened.close()
                power_loss_watch(directory.url.path)
            }
            // The figures of `make crash-test` (violations are the failed expectations).
            print(
                "power loss (\(durability)): \(points) crash points, \(checked) acknowledged pushes and saves checked, "
                    + "\(lostSaves) acknowledged saves lost, \(rewritesFound) rewritten feeds told")
            return lostSaves
        }

        @Test("full: at every crash point every acknowledged push and save survives; the store is intact and opens")
        func full() async throws {
            #expect(try await crashes(.full) == 0)
        }

        @Test(
            "normal: every acknowledged push survives, saves are whole or absent (some acknowledged ones lost), the store is intact and opens"
        )
        func normal() async throws {
            #expect(
                try await crashes(.normal) > 0, "no acknowledged save lost at normal: the power loss dropped nothing")
        }
    }
}
