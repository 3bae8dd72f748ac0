import ArgumentParser
import Foundation
import TributaryCommandSupport
import TributaryCore

/// `tributary generate swift --model FILE --output DIR`: code from a model file.
///
/// The language is an argument rather than a subcommand: a parent command with an argument of its own (needed to
/// refuse an unknown language by name, rather than report its flags as unknown options) takes the word a
/// subcommand would have been chosen by.
struct GenerateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Generate code from a model file: a typed Swift type per entity.",
        usage: "tributary generate swift --model <path> --output <path> [--access <access>]",
        discussion: """
            swift: writes DIR/<Entity>.swift for each entity of the model, replacing those files: a struct \
            conforming to TypedEntity that wraps a ManagedObject (a view, not a copy), with a property of the \
            attribute's Swift type per attribute (optional where the model says so), the destination's type for a \
            to-one relationship and an array of it for a to-many, a static TypedKey per attribute and to-one \
            relationship for predicates and sorts (PullRequest.additions >= 500, PullRequest.number.ascending), and \
            findOrCreate by the first uniqueness constraint. The files import TributaryCore. See docs/contexts.md.
            """)

    /// The languages this command writes.
    static let languages = ["swift"]

    @Argument(help: ArgumentHelp("The language to write: swift.", valueName: "language"))
    var language: String

    @Option(help: ArgumentHelp("The model file (JSON); see docs/model.md.", valueName: "path"))
    var model: String

    @Option(help: ArgumentHelp("The folder to write the files to (created if missing).", valueName: "path"))
    var output: String

    @Option(help: "The access level of the generated types: public or internal.")
    var access = "public"

    func validate() throws {
        guard Self.languages.contains(language) else {
            throw ValidationError(
                "unknown language '\(language)': tributary generate writes \(Self.languages.joined(separator: ", ")) "
                    + "(tributary generate swift --model FILE --output DIR)")
        }
        guard ["public", "internal"].contains(access) else {
            throw ValidationError("--access must be public or internal")
        }
    }

    func run() async throws {
        let loaded: Model
        do {
            loaded = try Model.load(contentsOf: URL(fileURLWithPath: model))
        } catch {
            throw ValidationError("\(error)")
        }
        do {
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            for file in SwiftEntityGenerator.files(for: loaded, source: model, access: access) {
                let path = URL(fileURLWithPath: output).appendingPathComponent(file.name).path
                try Data(file.contents.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                Terminal.line(path)
            }
        } catch {
            throw ValidationError("cannot write to \(output): \(error.localizedDescription)")
        }
    }
}
