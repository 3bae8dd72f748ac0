import Foundation

/// Standard input's lines, read on a thread of their own (a blocking read never runs on the cooperative pool).
public enum StandardInputLines {
    /// The lines, as they are read; the sequence ends with standard input.
    public static func lines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let reader = Thread {
            while let line = readLine() { continuation.yield(line) }
            continuation.finish()
        }
        reader.start()
        return stream
    }
}
