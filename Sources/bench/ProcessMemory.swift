import Foundation

/// Memory figures of a running process, read from `/proc/<pid>/status`.
enum ProcessMemory {
    /// The peak resident set size (`VmHWM`) in bytes, or 0 when the process is gone.
    static func peakResidentBytes(pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kilobytes = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
            return kilobytes * 1024
        }
        return 0
    }
}
