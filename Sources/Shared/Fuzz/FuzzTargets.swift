import Foundation
import GRDB
import TributaryCoordinator
import TributaryCore
import TributaryDemo
import TributaryProtocol

/// The decoders that read bytes from outside the process, as fuzz targets: each takes any bytes and must only ever
/// throw (or succeed), never crash or hang. `tributary-fuzz` runs them under libFuzzer (`make fuzz`) and replays
/// the corpus in `Fuzz/corpus`; `FuzzCorpusTests` replays it in every test run.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Wire frames: the signature and `Envelope` decoding of a ROUTER message, then the coordinator's checks.
    case wire
    /// A change set merged into a real store (in a savepoint that is rolled back).
    case changeSet = "change-set"
    /// The model file.
    case model
    /// NDJSON import rows applied to a context.
    case importRows = "import-rows"
    /// Predicate format strings, parsed and compiled for an entity.
    case predicate

    /// Runs the target on one input; errors are the expected outcome of bad input and are dropped.
    public func run(_ input: Data) {
        switch self {
        case .wire: Self.wire(input)
        case .changeSet: Self.changeSet(input)
        case .model: _ = try? Model.decode(input, source: "fuzz input")
        case .importRows: Self.importRows(input)
        case .predicate: Self.predicate(input)
        }
    }

    /// Frames: the input split at each 0xFF byte (so the fuzzer controls the frame count), decoded as the
    /// coordinator decodes a peer's message; a decoded predicate is compiled too.
    private static func wire(_ input: Data) {
        let frames = input.split(separator: 0xFF, omittingEmptySubsequences: false).map { Data($0) }
        guard let decoded = try? Wire.decodeEach(frames[...]) else { return }
        for case .success(let sized) in decoded { envelope(sized.envelope) }
    }

    private static func envelope(_ envelope: Tributary_V1_Envelope) {
        if case .fetchRequest(let request) = envelope.body, let entity = fuzzModel.entity(named: request.entity) {
            _ = try? FetchQuery(request, entity: entity, model: fuzzModel)
        }
        if case .saveChanges(let save) = envelope.body { apply(save.changes) }
    }

    private static func changeSet(_ input: Data) {
        guard let changes = try? Tributary_V1_ChangeSet(serializedBytes: input) else { return }
        apply(changes)
    }

    /// Merges a change set into the fuzz store and rolls it back, so every input starts from the same store.
    private static func apply(_ changes: Tributary_V1_ChangeSet) {
        guard let store = fuzzStore else { return }
        let save = SaveRequest(changes: changes)
        store.pool.writeWithoutTransaction { db in
            try? db.inSavepoint {
                _ = try? GroupCommitter.apply(save, from: "fuzz", in: db, writer: store.writer, model: store.model)
                return .rollback
            }
            // Outside a group commit: what the merger learned in the rolled-back savepoint is gone.
            store.writer.changesRolledBack()
        }
    }

    private static func importRows(_ input: Data) {
        guard let entity = fuzzModel.entity(named: "PullRequest") else { return }
        let decoder = ImportRowDecoder(entity: entity, model: fuzzModel)
        var batch = ImportChunk(model: fuzzModel)
        let lines = ImportJob.lines(of: input)
        input.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            for line in lines.prefix(1_000) {
                let slice = UnsafeBufferPointer(rebasing: bytes[line.range])
                try? decoder.apply(slice, number: line.number, to: &batch)
            }
        }
        apply(batch.changeSet())
    }

    private static func predicate(_ input: Data) {
        let format = String(decoding: input, as: UTF8.self)
        let arguments: [any PredicateArgument] = ["a", 1, 2.5, true, ["x", "y"]]
        guard let predicate = try? FetchPredicate(format: format, argumentArray: arguments) else { return }
        for entity in fuzzModel.entities {
            guard let compiled = try? predicate.compile(for: entity, in: fuzzModel) else { continue }
            _ = compiled.evaluate(
                values: Array(repeating: nil, count: entity.attributes.count),
                toOne: Array(repeating: nil, count: entity.relationships.count))
        }
    }

    private static let fuzzModel = DemoData.model

    /// A store in a temporary folder, opened once per process.
    private static let fuzzStore: RootStore? = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-fuzz-\(getpid())")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try? RootStore.open(path: directory.appendingPathComponent("store.sqlite").path, model: fuzzModel)
    }()
}
