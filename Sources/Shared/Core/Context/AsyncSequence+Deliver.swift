/// Delivering a sequence's elements onto a context (the articles' `deliverOn:` scheduler), so that each step of
/// a pipeline — fetch, transform, save — runs on the queue of the context whose objects it touches.
extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The results of `body` for each element, each computed on `context`'s queue, one at a time and in order.
    ///
    /// ```swift
    /// let titles = ids.deliver(on: slave) { id, context in try context.object(with: id)["title"] }
    /// for try await title in titles { print(title ?? "none") }
    /// ```
    /// An element whose task is cancelled before its block starts is not processed: the sequence throws
    /// `CancellationError`.
    public func deliver<T: Sendable>(
        on context: ObjectContext, _ body: @escaping @Sendable (Element, ObjectContext) throws -> T
    ) -> AsyncThrowingStream<T, any Error> {
        AsyncThrowingStream { continuation in
            // Unstructured: the stream's consumer drives it; its termination handler cancels the task.
            let task = Task {
                do {
                    for try await element in self {
                        continuation.yield(try await context.perform { context in try body(element, context) })
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
