import GRDB
import TributaryCore

/// Saves applied on the store's writer connection: a group of change sets merged in one transaction with their
/// jobs' progress and completions, a savepoint each only when one of them failed, and the claims that commit with
/// them (``queueGroupCommit(_:thenClaim:joining:)``, which `StoreWriter` drives).
package struct GroupCommitter: Sendable {
    package let pool: DatabasePool
    package let writer: WriterState
    let model: Model
    let jobs: JobStore

    init(pool: DatabasePool, writer: WriterState, model: Model, jobs: JobStore) {
        self.pool = pool
        self.writer = writer
        self.model = model
        self.jobs = jobs
    }
}
