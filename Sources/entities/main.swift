import Foundation
import TributaryCore

// tributary-entities MODEL OUTPUT [public|internal]: the entity types of `tributary generate swift`, for the
// TributaryEntities build-tool plugin (a small executable: the plugin builds it for every package that uses it).
let arguments = CommandLine.arguments.dropFirst()
guard (2...3).contains(arguments.count), let model = arguments.first, let output = arguments.dropFirst().first,
    ["public", "internal"].contains(arguments.dropFirst(2).first ?? "public")
else {
    FileHandle.standardError.write(Data("usage: tributary-entities MODEL OUTPUT [public|internal]\n".utf8))
    exit(64)
}
do {
    let loaded = try Model.load(contentsOf: URL(fileURLWithPath: model))
    try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
    let source = URL(fileURLWithPath: model).lastPathComponent
    for file in SwiftEntityGenerator.files(
        for: loaded, source: source, access: arguments.dropFirst(2).first ?? "public")
    {
        try Data(file.contents.utf8).write(
            to: URL(fileURLWithPath: output).appendingPathComponent(file.name), options: .atomic)
    }
} catch {
    FileHandle.standardError.write(Data("tributary-entities: \(model): \(error)\n".utf8))
    exit(1)
}
