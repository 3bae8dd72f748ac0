import Foundation

/// A small filesystem a test mounts for a store that runs out of room or turns read-only under a running coordinator:
/// a tmpfs of a given size (filled by a file of its own, ``fill(leaving:)``, freed by ``freeFilled()``), or an ext4 image on a
/// loop device mounted with `errors=remount-ro`, which ``failReadOnly()`` turns read-only as a disk error would.
/// Removed by ``remove()``. Needs root: ``tmpfsAvailable`` and ``ext4Available`` say whether this machine allows it.
public final class SmallFilesystem: Sendable {
    /// Where it is mounted.
    public let path: String
    /// The ext4 image file; nil for a tmpfs.
    private let image: String?

    /// Whether a tmpfs can be mounted here (root and `mount`), tried once.
    public static let tmpfsAvailable: Bool = {
        guard getuid() == 0, let filesystem = try? SmallFilesystem(tmpfsMegabytes: 1) else { return false }
        filesystem.remove()
        return true
    }()

    /// Whether an ext4 image can be mounted on a loop device and failed read-only here (root, `mkfs.ext4`, loop
    /// devices, ext4's `trigger_fs_error`), tried once.
    public static let ext4Available: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: mkfs),
            let filesystem = try? SmallFilesystem(ext4Megabytes: 8)
        else { return false }
        defer { filesystem.remove() }
        return (try? filesystem.errorTrigger()) != nil
    }()

    static let mkfs = "/usr/sbin/mkfs.ext4"

    /// Mounts a tmpfs of `megabytes` on a new directory.
    public init(tmpfsMegabytes megabytes: Int) throws {
        path = try Self.makeDirectory()
        image = nil
        do {
            try Self.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", path])
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
    }

    /// Makes an ext4 image of `megabytes` and mounts it on a loop device, with `errors=remount-ro`.
    public init(ext4Megabytes megabytes: Int) throws {
        path = try Self.makeDirectory()
        let image = path + ".img"
        self.image = image
        do {
            guard FileManager.default.createFile(atPath: image, contents: nil) else {
                throw CommandFailed(command: "create \(image)", output: "")
            }
            try FileHandle(forWritingTo: URL(fileURLWithPath: image)).truncate(atOffset: UInt64(megabytes) << 20)
            try Self.run(Self.mkfs, ["-q", "-F", image])
            try mount()
        } catch {
            try? FileManager.default.removeItem(atPath: image)
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
    }

    /// A path inside the filesystem.
    public func path(_ name: String) -> String { path + "/" + name }

    /// Fills the filesystem with a file of its own until about `megabytes` are left (fewer if something else
    /// writes meanwhile: a write that finds the disk full ends the file there).
    public func fill(leaving megabytes: Int) throws {
        let ballast = path("ballast")
        guard FileManager.default.createFile(atPath: ballast, contents: nil) else {
            throw CommandFailed(command: "create \(ballast)", output: String(cString: strerror(errno)))
        }
        let descriptor = open(ballast, O_WRONLY)
        guard descriptor >= 0 else {
            throw CommandFailed(command: "open \(ballast)", output: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0x5a, count: 1 << 16)
        while try free() > UInt64(megabytes) << 20 {
            let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < chunk.count { break }
        }
    }

    /// Deletes the file ``fill(leaving:)`` wrote: the space is free again.
    public func freeFilled() throws {
        try FileManager.default.removeItem(atPath: path("ballast"))
    }

    /// The bytes free for files.
    public func free() throws -> UInt64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else {
            throw CommandFailed(command: "statvfs \(path)", output: String(cString: strerror(errno)))
        }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    /// Turns the ext4 filesystem read-only as a disk error does (`errors=remount-ro`): every later write to it
    /// fails with EROFS, also for files already open, until it is unmounted and checked.
    public func failReadOnly() throws {
        let trigger = try errorTrigger()
        try Data("tributary test".utf8).write(to: URL(fileURLWithPath: trigger))
    }

    /// After ``failReadOnly()`` and once nothing uses it: unmounts the ext4 filesystem, checks it (`e2fsck -fy`,
    /// which replays its journal) and mounts it again, writable.
    public func repair() throws {
        try Self.run("/usr/bin/umount", [path])
        guard let image else { return }
        // e2fsck exits 1 when it fixed something: fine here.
        let status = try Self.status("/usr/sbin/e2fsck", ["-fy", image])
        guard status <= 1 else { throw CommandFailed(command: "e2fsck -fy \(image)", output: "exit status \(status)") }
        try mount()
    }

    /// Unmounts (lazily, should a process still hold a file) and deletes what it made; safe to call twice.
    public func remove() {
        _ = try? Self.status("/usr/bin/umount", ["-l", path])
        if let image { try? FileManager.default.removeItem(atPath: image) }
        try? FileManager.default.removeItem(atPath: path)
    }

    private func mount() throws {
        guard let image else { return }
        try Self.run("/usr/bin/mount", ["-o", "loop,errors=remount-ro", image, path])
    }

    /// ext4's sysfs file that fails the filesystem on a write, for the loop device it is mounted on.
    private func errorTrigger() throws -> String {
        let source = try Self.run("/usr/bin/findmnt", ["-n", "-o", "SOURCE", path])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let trigger = "/sys/fs/ext4/\(URL(fileURLWithPath: source).lastPathComponent)/trigger_fs_error"
        guard FileManager.default.fileExists(atPath: trigger) else {
            throw CommandFailed(command: "find \(trigger)", output: "this kernel's ext4 has no trigger_fs_error")
        }
        return trigger
    }

    private static func makeDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "tributary-fs-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    /// A command that exited non-zero, with what it printed.
    public struct CommandFailed: Error, CustomStringConvertible {
        public let command: String
        public let output: String
        public var description: String { "\(command) failed: \(output)" }
    }

    @discardableResult
    private static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let (status, output) = try execute(executable, arguments)
        guard status == 0 else {
            throw CommandFailed(command: ([executable] + arguments).joined(separator: " "), output: output)
        }
        return output
    }

    private static func status(_ executable: String, _ arguments: [String]) throws -> Int32 {
        try execute(executable, arguments).status
    }

    private static func execute(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
