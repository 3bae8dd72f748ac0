/// The services the router hands work to, composed and started by ``CoordinatorService``: the root store, its only
/// writer, its readers, the change feed's publisher, the process's totals, the router's
/// published state and the request handlers. The router holds them; the service
/// group owns their lifecycles.
struct CoordinatorParts: Sendable {
    /// The root store: opened before anything is bound, closed after every service has returned.
    let store: RootStore
    /// The only writer of the store: group commits and every other write, in one queue.
    let writer: StoreWriter
    /// Fetches, history and snapshot pages and the admin reads, answered off the router.
    let readers: ReaderPool
    /// The change feed, which the router hands each commit's didSave parts.
    let publisher: FeedPublisher
    /// What this process committed since it started (the dashboard's totals).
    let totals: CoordinatorTotals
    /// The router's workers and pool as of its last step, for reads answered off the router.
    let snapshot: RouterSnapshot
    /// The clients' requests, behind the router and the HTTP routes alike.
    let handlers: CoordinatorHandlers
}
