import Foundation
import Testing

@testable import TributaryFuzz

/// Every input of the fuzz corpus (the seeds, and each crash `make fuzz` ever found, copied into
/// Fuzz/corpus/<target>/) goes through its decoder again: none may crash.
@Suite("Fuzz corpus replayed through every decoder")
struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus")

    @Test("each target's corpus replays without a crash", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        let folder = Self.corpus.appendingPathComponent(target.rawValue)
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        #expect(!files.isEmpty, "\(target.rawValue) has a corpus")
        for file in files { target.run(try Data(contentsOf: file)) }
    }

    @Test("the seeds in the repository are the ones FuzzSeeds writes (regenerate with `make fuzz-seeds`)")
    func seedsUpToDate() throws {
        for (target, seeds) in try FuzzSeeds.all() {
            for (index, seed) in seeds.enumerated() {
                let file = Self.corpus.appendingPathComponent("\(target.rawValue)/seed-\(index)")
                let stored = try Data(contentsOf: file)
                if target == .changeSet || target == .wire {
                    // Ids are new each time; the size and the decoded shape stay.
                    #expect(stored.count == seed.count, "\(file.lastPathComponent) of \(target.rawValue)")
                } else {
                    #expect(stored == seed, "\(file.lastPathComponent) of \(target.rawValue)")
                }
            }
        }
    }
}
