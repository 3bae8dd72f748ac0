import ArgumentParser
import Foundation

/// `--format` and `--columns` of `tributary fetch` and `tributary watch`: a table on a terminal, a line per object
/// into a pipe, unless told.
public struct ObjectFormatOptions: ParsableArguments {
    /// How objects are printed as text.
    public enum Format: String, ExpressibleByArgument, CaseIterable, Sendable {
        /// Columns under a header, cut to the terminal's width.
        case table
        /// One line per object with its id, version and every property.
        case lines
    }

    @Option(
        help: ArgumentHelp(
            "table: columns under a header, cut to the terminal's width (the default on a terminal, or with --columns); lines: one line per object with its id, version and every property (the default into a pipe).",
            valueName: "table|lines"))
    public var format: Format?

    @Option(
        help: ArgumentHelp(
            "The table's columns, comma-separated key paths: number,title,author.login,reviewers.@count (through to-one relationships; a to-one relationship shows its destination's id, a to-many one its count). Default: the attributes, each to-one relationship by its destination's single unique key (else its id), each to-many one's count.",
            valueName: "keys"))
    public var columns: String?

    public init() {}

    /// The output these options and `--json` choose.
    /// - Parameter prefetching: the command's `--prefetch` paths, whose destinations only the lines and JSON print
    ///   (so without `--format` they choose lines).
    /// - Throws: `ValidationError` for `--json` with `--format` or `--columns`, `--columns` with `--format lines`,
    ///   or `--prefetch` with a table.
    public func style(json: Bool, prefetching: [String] = []) throws -> ObjectOutputStyle {
        if json {
            if let format { throw ValidationError("--json prints JSON; it takes no --format (given '\(format)')") }
            if columns != nil { throw ValidationError("--columns applies to the table; --json prints every property") }
            return .json
        }
        if !prefetching.isEmpty, format == .table || columns != nil {
            throw ValidationError(
                "--prefetch prints destinations after the objects (--format lines or --json); a table reaches them "
                    + "through --columns key paths (author.login)")
        }
        switch format {
        case .lines:
            if columns != nil {
                throw ValidationError("--columns applies to the table; --format lines prints every property")
            }
            return .lines
        case .table: return .table(columns: columns)
        case nil: return columns != nil || (prefetching.isEmpty && isatty(1) != 0) ? .table(columns: columns) : .lines
        }
    }
}

/// How a command prints objects.
public enum ObjectOutputStyle: Sendable, Equatable {
    /// One JSON object per line.
    case json
    /// One text line per object.
    case lines
    /// A table of these columns (`--columns`), or of the entity's own.
    case table(columns: String?)
}
