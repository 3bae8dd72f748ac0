import Foundation
import Testing

@testable import TributaryCoordinator

@Suite("Process-wide settings the coordinator makes")
struct StoreSettingsTests {
    /// Whether glibc mapped the block at `pointer` on its own: the IS_MMAPPED bit of its chunk header.
    static func isMapped(_ pointer: UnsafeMutableRawPointer) -> Bool {
        (pointer - MemoryLayout<UInt>.size).load(as: UInt.self) & 2 != 0
    }

    @Test(
        "glibc's mmap threshold stays fixed (freeing a large block does not raise it), and a heap keeps its freed top for the next blocks"
    )
    func mmapThreshold() async throws {
        // Judged in a process of its own: in this one, blocks other tests freed coalesce into free chunks of several
        // MiB that malloc hands out from the heap whatever the threshold.
        guard ProcessInfo.processInfo.environment[Self.freshHeap] == "1" else {
            let run = try await Binaries.run(
                executable: URL(fileURLWithPath: CommandLine.arguments[0]),
                ["--testing-library", "swift-testing", "--filter", "StoreSettingsTests"],
                environment: [Self.freshHeap: "1"], timeout: .seconds(120))
            let said = run.output + run.error
            #expect(run.status == 0 && said.contains("Test run with 1 test") && said.contains("passed"), "\(said)")
            return
        }
        #expect(ProcessMemorySettings.apply())
        // With glibc's dynamic threshold, freeing a 4 MiB mapped block raises the threshold above 4 MiB, and the
        // next 3 MiB block comes from the heap; fixed at 1 MiB, it is mapped on its own (and returned on free).
        let large = try #require(malloc(4 << 20))
        #expect(Self.isMapped(large))
        free(large)
        let next = try #require(malloc(3 << 20))
        defer { free(next) }
        #expect(Self.isMapped(next))

        // 4 MiB of blocks below the mmap threshold, written, then freed (back into the heap's top): made again, they
        // reuse the same pages, where a top given back to the system (past 128 KiB by glibc's default) faults every
        // page in anew, about a thousand.
        func churn() {
            let size = 256 << 10
            let blocks = (0..<16).compactMap { _ in malloc(size) }
            for block in blocks { memset(block, 1, size) }
            for block in blocks.reversed() { free(block) }
        }
        func pageFaults() -> Int {
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            return usage.ru_minflt
        }
        churn()
        let before = pageFaults()
        churn()
        #expect(pageFaults() - before < 256, "freed heap pages were given back and faulted in again")
    }

    /// Set in the process that makes the check.
    static let freshHeap = "TRIBUTARY_TEST_FRESH_HEAP"
}
