import Foundation

@testable import TributaryCoordinator
@testable import TributaryCore

/// A root store in a temporary folder, for a model given as JSON, and contexts that save to it in process.
struct TemporaryStore {
    let directory: TemporaryDirectory
    let model: Model
    let store: RootStore

    init(modelJSON: String, durability: Durability = .full) throws {
        directory = try TemporaryDirectory()
        model = try Model.decode(Data(modelJSON.utf8))
        store = try RootStore.open(path: directory.path("store.sqlite"), model: model, durability: durability)
    }

    /// A context whose parent is the store, with a merge policy.
    func makeContext(_ name: String = "context", policy: MergePolicy = .error) -> ObjectContext {
        let context = ObjectContext(model: model, parent: LocalRootParent(store: store), name: name)
        context.mergePolicy = policy
        return context
    }
}
