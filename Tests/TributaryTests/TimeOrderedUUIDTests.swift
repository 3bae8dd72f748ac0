import Foundation
import Testing

@testable import TributaryCore

@Suite("Time-ordered ids (UUIDv7)")
struct TimeOrderedUUIDTests {
    @Test("ids made on many threads at once are all distinct, and each thread's come in increasing order")
    func concurrentIDs() async {
        let perTask = 20_000
        let batches = await withTaskGroup(of: [UUID].self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<perTask).map { _ in TimeOrderedUUID.next() } }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(batches.flatMap { $0 }).count == 8 * perTask)
        for batch in batches {
            let bytes = batch.map { withUnsafeBytes(of: $0.uuid) { Array($0) } }
            #expect(zip(bytes, bytes.dropFirst()).allSatisfy { $0.lexicographicallyPrecedes($1) })
            #expect(bytes.allSatisfy { $0[6] >> 4 == 7 && $0[8] >> 6 == 0b10 }, "version 7, RFC 9562 variant")
        }
        // The timestamp is the current time in milliseconds.
        let first = withUnsafeBytes(of: TimeOrderedUUID.next().uuid) {
            $0.prefix(6).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        #expect(first <= now + 1_000 && first + 5_000 > now)
    }
}
