/// A handler's answer to come: made by the handler's method once it checked the request and fixed its place (a write
/// queued behind the saves before it, or the point a read must see), and computed by whoever awaits it.
///
/// The ZeroMQ router makes a request's `Promised` in its turn, so that its place follows the messages before it, and
/// has the reader pool compute it and send the reply (``ReaderPool/submit(peer:requestID:making:)``); an in-process
/// caller (the HTTP routes) has it answered through ``CoordinatorHandlers/answer(_:)``. Either way the pool's place is
/// taken before the handler is called, so a request refused for want of one changed nothing.
package struct Promised<Value: Sendable>: Sendable {
    let readers: ReaderPool
    /// The work that makes the value: waits for what the request needs, then reads or takes the write's result.
    let work: @Sendable () async throws -> Value

    /// Another promise of what `transform` makes of this one's value.
    func map<Other: Sendable>(_ transform: @escaping @Sendable (Value) throws -> Other) -> Promised<Other> {
        let work = self.work
        return Promised<Other>(readers: readers) { try transform(try await work()) }
    }
}
