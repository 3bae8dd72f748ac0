import Foundation

/// Paths in this repository's checkout, for tests that run its scripts and examples.
enum Repository {
    /// The checkout's root (this file is Tests/TributaryTests/Support/Repository.swift).
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
}
