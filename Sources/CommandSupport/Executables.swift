import Foundation

/// Finds the other Tributary executables next to the running one (they are built and installed together).
public enum Executables {
    /// The directory of the running executable.
    public static var directory: URL {
        (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0]))
            .resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// The executable `name` beside this one.
    /// - Throws: a message naming the path when it is missing.
    public static func sibling(_ name: String) throws -> URL {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw ExecutableNotFound(path: url.path)
        }
        return url
    }
}

/// A Tributary executable that should sit beside the running one and does not.
public struct ExecutableNotFound: Error, CustomStringConvertible {
    public let path: String
    public var description: String { "cannot find \(path); build all products with `swift build`" }
}
