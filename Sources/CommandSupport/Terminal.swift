import Foundation

/// Writing to the terminal: standard error lines, and a progress bar that redraws in place on a TTY.
public enum Terminal {
    /// Writes a line to standard error.
    public static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Writes a line to standard output and flushes it (so pipes see it at once).
    public static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// The width a table on standard output is cut to: the terminal's, else `COLUMNS` from the environment, else
    /// none (nil).
    public static var width: Int? {
        var size = winsize()
        if isatty(1) != 0, ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return ProcessInfo.processInfo.environment["COLUMNS"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
    }

    /// Whether standard error is a terminal.
    public static var isInteractive: Bool { isatty(2) != 0 }

    /// `[#####.....]  50,000 / 100,000 rows  50%`
    public static func progressBar(done: UInt64, total: UInt64, unit: String, width: Int = 30) -> String {
        let fraction = total == 0 ? 1 : min(1, Double(done) / Double(total))
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        return "[\(bar)] \(done) / \(total) \(unit)  \(Int(fraction * 100))%"
    }

    /// Redraws a progress line in place when standard error is a TTY; otherwise writes nothing.
    public static func progress(_ text: String) {
        if isInteractive {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + text).utf8))
        }
    }

    /// Ends an in-place progress line.
    public static func endProgress(_ text: String) {
        if isInteractive {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + text + "\n").utf8))
        } else {
            error(text)
        }
    }
}
