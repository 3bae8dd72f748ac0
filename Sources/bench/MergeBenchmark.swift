import Foundation
import TributaryCoordinator
import TributaryCore
import TributaryDemo
import TributaryProtocol

/// The writer alone: the import's change sets, built before the clock starts exactly as an import worker builds
/// them (``ImportRowDecoder/changeSet(of:in:model:)``, the import job's own code, one save per 1,000 rows), applied in this process to a
/// store through the same group commit the coordinator runs, `groupSize` saves per commit. No sockets, workers,
/// jobs or feed: what is left is the merge, the history record, the didSave and the commit — the share of the
/// import that the writer's single thread carries. The process's CPU time over the apply (the writer and the
/// checkpointer; nothing else runs) is reported per row: a steadier figure than rows/s on a machine that drifts,
/// for comparing builds.
struct MergeBenchmark {
    let input: Data
    let rows: Int
    let directory: URL
    var rowsPerSave = 1000
    var groupSize = 32

    struct Result {
        let rowsPerSecond: Double
        /// The process's user + system CPU time over the apply, per pull request.
        let cpuMicrosecondsPerRow: Double
        /// The CPU time building the change sets took (a worker's share of the import), per pull request.
        let buildMicrosecondsPerRow: Double
    }

    func run(name: String = "merge") async throws -> Result {
        let model = DemoData.model
        guard let entity = model.entity(named: "PullRequest") else { throw BaselineError("no PullRequest entity") }
        let buildStart = ProcessMemory.cpuSeconds(pid: getpid())
        let saves = try changeSets(entity: entity, model: model)
        let build = ProcessMemory.cpuSeconds(pid: getpid()) - buildStart
        let path = directory.appendingPathComponent("\(name).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let store = try RootStore.open(path: path, model: model)
        let groups = stride(from: 0, to: saves.count, by: groupSize).map { start in
            saves[start..<min(start + groupSize, saves.count)].map { (save: $0, worker: "bench") }
        }
        let cpuBefore = ProcessMemory.cpuSeconds(pid: getpid())
        let start = DispatchTime.now().uptimeNanoseconds
        for group in groups {
            for result in try await store.saves.applySaves(group) {
                _ = try result.get()
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpu = ProcessMemory.cpuSeconds(pid: getpid()) - cpuBefore
        try store.close()
        return Result(
            rowsPerSecond: Double(rows) / seconds, cpuMicrosecondsPerRow: cpu * 1e6 / Double(rows),
            buildMicrosecondsPerRow: build * 1e6 / Double(rows))
    }

    /// The saves an import worker would send for `input`, in order.
    private func changeSets(entity: Entity, model: Model) throws -> [SaveRequest] {
        let lines = ImportJob.lines(of: input)
        let decoder = ImportRowDecoder(entity: entity, model: model)
        return try stride(from: 0, to: lines.count, by: rowsPerSave).map { start in
            SaveRequest(
                changes: try decoder.changeSet(
                    of: lines[start..<min(start + rowsPerSave, lines.count)], in: input, model: model))
        }
    }
}
