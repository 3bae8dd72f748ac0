import Foundation
import PackagePlugin

/// A build-tool plugin that writes a target's entity types (`tributary generate swift`) on every build, from the
/// model files in the target's folder named `*.tributary.json` (exclude them from the target's sources). Each model's
/// entities become `<Entity>.swift` in the build's own folder, compiled with the target; nothing is committed.
///
/// ```swift
/// .executableTarget(
///     name: "MyWorker", dependencies: [.product(name: "Tributary", package: "Tributary")],
///     exclude: ["model.tributary.json"],
///     plugins: [.plugin(name: "TributaryEntities", package: "Tributary")])
/// ```
@main
struct TributaryEntities: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let tool = try context.tool(named: "tributary-entities")
        let models = try FileManager.default.contentsOfDirectory(atPath: target.directoryURL.path)
            .filter { $0.hasSuffix(".tributary.json") }.sorted()
        return try models.map { name in
            let model = target.directoryURL.appendingPathComponent(name)
            let output = context.pluginWorkDirectoryURL.appendingPathComponent(
                String(name.dropLast(".tributary.json".count)))
            // The files the tool writes, one per entity: the build needs their names before it runs.
            return .buildCommand(
                displayName: "Generating the entity types of \(name)", executable: tool.url,
                arguments: [model.path, output.path, "public"], inputFiles: [model],
                outputFiles: try Self.entityNames(in: model).map { output.appendingPathComponent("\($0).swift") })
        }
    }

    /// The entity names of a model file (the tool reports a bad model; this reads only the names).
    static func entityNames(in model: URL) throws -> [String] {
        guard let object = try JSONSerialization.jsonObject(with: Data(contentsOf: model)) as? [String: Any],
            let entities = object["entities"] as? [[String: Any]]
        else { throw PluginError("\(model.path) has no \"entities\" list") }
        return entities.compactMap { $0["name"] as? String }
    }

    struct PluginError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
