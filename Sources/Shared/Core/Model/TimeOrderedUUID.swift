import Foundation
import Synchronization

/// Makes UUIDv7 values (RFC 9562): a 48-bit millisecond timestamp, then a counter, then random bits.
///
/// Time-ordered keys append to the end of SQLite's B-tree instead of splitting random pages, so an id index takes
/// its inserts on its last pages, which stay cached. Within a millisecond the 12-bit counter keeps ids from one
/// process ordered.
///
/// Lock-free: an import's contexts make ids on many threads at once, and would contend for a mutex on every id. The
/// clock is one atomic word; the random bits come from a SplitMix64 sequence seeded once per process from the
/// system's generator (a system call per id would cost more than the rest of the id), which keeps ids of different
/// processes apart as well as fresh random bits would.
enum TimeOrderedUUID {
    /// The last milliseconds (high 52 bits) and counter (low 12 bits) handed out.
    private static let clock = Atomic<UInt64>(0)
    private static let sequence = Atomic<UInt64>(0)
    private static let seed: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }()

    /// The next value of the process's random sequence (SplitMix64 over a shared counter).
    private static func random() -> UInt64 {
        var z = seed &+ sequence.wrappingAdd(1, ordering: .relaxed).oldValue &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func next() -> UUID {
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        var current = clock.load(ordering: .relaxed)
        var next: UInt64
        while true {
            let (milliseconds, counter) = (current >> 12, current & 0xFFF)
            if now > milliseconds {
                next = now << 12 | (random() & 0x1FF)
            } else if counter < 0xFFF {
                next = current + 1
            } else {
                // Counter exhausted within one millisecond: borrow the next millisecond, staying monotonic.
                next = (milliseconds + 1) << 12
            }
            let (exchanged, original) = clock.compareExchange(
                expected: current, desired: next, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        let milliseconds = next >> 12
        let counter = UInt16(truncatingIfNeeded: next & 0xFFF)
        let tail = random()
        let bytes: uuid_t = (
            UInt8(truncatingIfNeeded: milliseconds >> 40), UInt8(truncatingIfNeeded: milliseconds >> 32),
            UInt8(truncatingIfNeeded: milliseconds >> 24), UInt8(truncatingIfNeeded: milliseconds >> 16),
            UInt8(truncatingIfNeeded: milliseconds >> 8), UInt8(truncatingIfNeeded: milliseconds),
            0x70 | UInt8(counter >> 8), UInt8(truncatingIfNeeded: counter),
            0x80 | UInt8(truncatingIfNeeded: tail >> 56 & 0x3F), UInt8(truncatingIfNeeded: tail >> 48),
            UInt8(truncatingIfNeeded: tail >> 40), UInt8(truncatingIfNeeded: tail >> 32),
            UInt8(truncatingIfNeeded: tail >> 24), UInt8(truncatingIfNeeded: tail >> 16),
            UInt8(truncatingIfNeeded: tail >> 8), UInt8(truncatingIfNeeded: tail)
        )
        return UUID(uuid: bytes)
    }
}
