import Foundation
import GRDB
import Testing

@testable import TributaryCommandSupport
@testable import TributaryCore

/// `tributary fetch` and `tributary watch` as a user at a terminal sees them: a table of columns cut to the
/// terminal's width, read through a real pseudo-terminal of 80 and 140 columns from real processes.
@Suite("Command line: tables on a terminal", .serialized)
struct TableOutputTests {
    static let model = try! JSONDecoder().decode(Model.self, from: Data(FetchCommandTests.modelJSON.utf8))
    static var pullRequest: Entity { model.entity(named: "PullRequest")! }
    static var defaultKeys: [String] { ObjectColumn.defaultKeys(entity: pullRequest, model: model) }

    /// The cells of a table's lines, split at the spans of its rule (line 1).
    static func cells(_ lines: [String]) throws -> [[String]] {
        let rule = Array(try #require(lines.dropFirst().first))
        var spans: [Range<Int>] = []
        var start: Int?
        for (index, character) in (rule + [" "]).enumerated() {
            if character == "-", start == nil { start = index }
            if character != "-", let begun = start {
                spans.append(begun..<index)
                start = nil
            }
        }
        return lines.enumerated().filter { $0.offset != 1 }.map { _, line in
            let characters = Array(line)
            return spans.map { span in
                let end = min(span.upperBound, characters.count)
                guard span.lowerBound < end else { return "" }
                return String(characters[span.lowerBound..<end]).trimmingCharacters(in: .whitespaces)
            }
        }
    }

    /// Whether `shown` is `value`, or `value` cut (its start and `…`).
    static func shows(_ shown: String, _ value: String) -> Bool {
        shown == value || (shown.hasSuffix("…") && value.hasPrefix(shown.dropLast()) && shown.count < value.count)
    }

    @Test(
        "the default columns: the attributes, a to-one relationship by its destination's unique key, a to-many one's count"
    )
    func defaultColumns() throws {
        let columns = try ObjectColumn.columns(nil, entity: Self.pullRequest, model: Self.model)
        #expect(
            columns.map(\.key) == [
                "number", "title", "state", "merged", "additions", "score", "createdAt", "author.login",
                "reviewers.@count",
            ])
        #expect(columns.map(\.isNumeric) == [true, false, false, false, true, true, false, false, true])
        #expect(columns[7].prefetchPaths == ["author"] && columns[7].ending == .attribute(.string))
        let named = try ObjectColumn.columns(
            "author, reviewers ,author.login", entity: Self.pullRequest, model: Self.model)
        #expect(named.map(\.ending) == [.destination, .count, .attribute(.string)])
        #expect(named.map(\.key) == ["author", "reviewers", "author.login"])
    }

    @Test(
        "a key path a column cannot read is refused, naming it",
        arguments: [
            ("nope", "entity 'PullRequest' has no attribute or relationship named 'nope' (in 'nope')"),
            ("author.nope", "entity 'User' has no attribute or relationship named 'nope' (in 'author.nope')"),
            ("title.length", "entity 'PullRequest' has no relationship named 'title' (in 'title.length')"),
            ("reviewers.login", "goes through the to-many relationship 'reviewers'"),
            ("author.@count", "@count follows a to-many relationship; 'author' is to-one"),
            ("number.@count", "@count follows a to-many relationship; 'number' is an attribute"),
            ("number,,title", "has an empty one"),
        ])
    func badColumns(list: String, message: String) {
        #expect {
            _ = try ObjectColumn.columns(list, entity: Self.pullRequest, model: Self.model)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test("a table is cut to its width: the widest columns narrow first, then columns drop from the right")
    func cutToWidth() throws {
        let columns = try ObjectColumn.columns(
            "number,title,state,author", entity: Self.pullRequest, model: Self.model)
        let id = "6f1c0e2a-9b3d-4c5e-8f70-112233445566"
        let rows = [
            ["7", String(repeating: "a long title ", count: 8), "open", id],
            ["12345", "short", "closed", ""],
        ]
        let whole = ObjectTable.lines(columns: columns, rows: rows, width: nil)
        #expect(
            try Self.cells(whole) == [["number", "title", "state", "author"]]
                + rows.map { $0.map { $0.trimmingCharacters(in: .whitespaces) } })
        #expect(whole[2].hasPrefix("     7  a long title"), "numbers align right: \(whole[2])")

        let cut = ObjectTable.lines(columns: columns, rows: rows, width: 100)
        #expect(cut.allSatisfy { $0.count <= 100 } && cut.contains { $0.count == 100 }, "\(cut)")
        let cells = try Self.cells(cut)
        #expect(cells[0] == ["number", "title", "state", "author"])
        #expect(cells[1][0] == "7" && cells[1][2] == "open")
        #expect(cells[1][1].hasSuffix("…") && Self.shows(cells[1][1], rows[0][1]), "the widest column is cut")
        #expect(cells[1][3] == id, "a narrower column keeps its width while the widest is wider")
        let balanced = try Self.cells(ObjectTable.lines(columns: columns, rows: rows, width: 80))
        #expect(balanced[1][1].count == balanced[1][3].count, "once as wide, both narrow: \(balanced[1])")

        let narrow = ObjectTable.lines(columns: columns, rows: rows, width: 20)
        #expect(narrow.allSatisfy { $0.count <= 20 }, "\(narrow)")
        #expect(try Self.cells(narrow)[0].count < 4, "columns left out from the right")
        #expect(narrow[0].hasPrefix("number"))
    }

    @Test("a cell shows a string as it is, its line breaks and tabs escaped, and NULL as nothing")
    func cellText() {
        #expect(ObjectTable.text(.string(#"Fix "quotes""#)) == #"Fix "quotes""#)
        #expect(ObjectTable.text(.string("a\nb\tc\u{1}")) == #"a\nb\tc\u0001"#)
        #expect(ObjectTable.text(.double(0.5)) == "0.5" && ObjectTable.text(.bool(true)) == "true")
        let row = FetchedRow(
            FetchedObject(
                id: ObjectID(entity: "PullRequest", uuid: UUID()), version: 1, entity: Self.pullRequest,
                attributes: [:], toOne: [:], toMany: ["reviewers": []]), reached: [:])
        let columns = try! ObjectColumn.columns(nil, entity: Self.pullRequest, model: Self.model)
        #expect(columns.map { $0.cell(row) } == ["", "", "", "", "", "", "", "", "0"])
    }
}

extension TableOutputTests {
    /// The lines a command run to its end on a terminal `columns` wide printed.
    static func printed(_ arguments: [String], columns: Int) async throws -> [String] {
        let terminal = try TerminalProcess("tributary", arguments, columns: columns)
        defer { terminal.stop() }
        #expect(try await terminal.waitForExit() == 0)
        let text = try await terminal.waitForClose()
        return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty }
    }

    /// Each pull request's number, title as a cell shows it, author's login and reviewer count, read from the store
    /// with a separate connection.
    static func stored(_ storePath: String) throws -> [Int: [String: String]] {
        let store = try DatabaseQueue(path: storePath)
        return try store.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT p.number, p.title, p.state, p.additions, u.login,
                           (SELECT COUNT(*) FROM PullRequest_reviewers r WHERE r.source = p._rowid) AS reviewers
                    FROM PullRequest p LEFT JOIN User u ON u._rowid = p.author
                    """
            ).reduce(into: [:]) { rows, row in
                rows[row["number"]] = [
                    "number": String(row["number"] as Int), "title": ObjectTable.text(.string(row["title"])),
                    "state": row["state"], "additions": String(row["additions"] as Int), "author.login": row["login"],
                    "reviewers.@count": String(row["reviewers"] as Int),
                ]
            }
        }
    }

    @Test("fetch on a terminal prints a table that fits 80 and 140 columns, with the store's values")
    func fetchOnATerminal() async throws {
        try await FetchCommandTests.withPullRequests { coordinator, endpoints in
            let stored = try Self.stored(coordinator.storePath)
            let fetch = ["fetch", "--entity", "PullRequest", "--sort", "number", "--limit", "12"] + endpoints.prefix(2)
            for width in [80, 140] {
                let lines = try await Self.printed(fetch, columns: width)
                #expect(lines.count == 14 && lines.allSatisfy { $0.count <= width }, "\(width): \(lines)")
                let cells = try Self.cells(lines)
                // Headers are cut as cells are.
                let headers = zip(cells[0], Self.defaultKeys).map { Self.shows($0, $1) ? $1 : $0 }
                #expect(
                    headers.count >= 3 && Self.defaultKeys.starts(with: headers),
                    "\(headers)\n\(lines.joined(separator: "\n"))")
                if width == 140 { #expect(cells[0] == Self.defaultKeys, "every column fits 140 whole") }
                for row in cells.dropFirst() {
                    let number = try #require(Int(row[0]))
                    let expected = try #require(stored[number])
                    for (header, cell) in zip(headers, row) {
                        guard let value = expected[header] else { continue }
                        #expect(Self.shows(cell, value), "#\(number) \(header): '\(cell)' for '\(value)'")
                        if width == 140 { #expect(cell == value) }
                    }
                }
            }

            // Named columns, a to-one relationship's id among them; NULL is an empty cell.
            let named = try await Self.printed(
                fetch + ["--columns", "number,score,author.login,reviewers.@count,author"], columns: 80)
            let cells = try Self.cells(named)
            #expect(cells[0] == ["number", "score", "author.login", "reviewers.@count", "author"])
            #expect(cells[4][1] == "" && cells[2][1] == "0.1", "#4 has no score, #2 0.1: \(cells)")
            #expect(named.allSatisfy { $0.count <= 80 })

            // --format lines on a terminal prints the line form.
            let lines = try await Self.printed(fetch + ["--format", "lines", "--limit", "2"], columns: 80)
            #expect(lines.count == 2 && lines.allSatisfy { $0.hasPrefix("PullRequest/") }, "\(lines)")
        }
    }

    @Test("watch on an 80-column terminal redraws a table that fits, with sections, as commits change it")
    func watchOnATerminal() async throws {
        try await FetchCommandTests.withPullRequests { coordinator, endpoints in
            let watch = try TerminalProcess(
                "tributary",
                [
                    "watch", "--entity", "PullRequest", "--where", "state == 'open'", "--sort", "number", "--section",
                    "author.login",
                ] + endpoints, columns: 80)
            defer { watch.stop() }
            let clear = "\u{1B}[H\u{1B}[2J"
            /// The last whole frame drawn that satisfies `condition`.
            func frame(_ condition: @escaping @Sendable ([String]) -> Bool) async throws -> [String] {
                let text = try await watch.waitForText { text in
                    text.components(separatedBy: clear).dropFirst().contains { frame in
                        frame.hasSuffix("\n") && condition(frame.split(separator: "\n").map(String.init))
                    }
                }
                return try #require(
                    text.components(separatedBy: clear).dropFirst().last { frame in
                        frame.hasSuffix("\n") && condition(frame.split(separator: "\n").map(String.init))
                    }
                ).split(separator: "\n").map(String.init)
            }
            let first = try await frame { $0.first?.hasPrefix("PullRequest: 8 shown") == true }
            #expect(first.allSatisfy { $0.count <= 80 }, "\(first)")
            // The header, the table's header and rule, a line per section (the authors of the open ones), the rows.
            let sections = first.filter { $0.hasPrefix("-- ") }
            #expect(sections.map { String($0.split(separator: " ")[1]) } == ["ada", "alan", "anita", "grace"])
            #expect(first.count == 1 + 2 + sections.count + 8)

            let updated = try await Binaries.run(
                "tributary",
                ["update", "--entity", "PullRequest", "--where", "number == 2", "--set", "title=Renamed in a commit"]
                    + endpoints.prefix(2))
            #expect(updated.status == 0, "\(updated.error)")
            let next = try await frame { frame in
                let rows = (try? Self.cells(Array(frame.dropFirst().filter { !$0.hasPrefix("-- ") }))) ?? []
                return rows.contains { $0.first == "2" && Self.shows($0[1], "Renamed in a commit") }
            }
            #expect(next.allSatisfy { $0.count <= 80 }, "\(next)")
            watch.interrupt()
            #expect(try await watch.waitForExit() == 0)
        }
    }

    @Test(
        "--format, --columns, --json and --prefetch: a combination that means nothing is refused by name",
        arguments: [
            (["--json", "--format", "table"], "--json prints JSON; it takes no --format"),
            (["--json", "--columns", "number"], "--columns applies to the table; --json"),
            (["--format", "lines", "--columns", "number"], "--columns applies to the table; --format lines"),
            (["--prefetch", "author", "--format", "table"], "--prefetch prints destinations after the objects"),
            (["--format", "wide"], "wide"),
        ])
    func badFormats(flags: [String], message: String) async throws {
        let result = try await Binaries.run(
            "tributary", ["fetch", "--entity", "PullRequest", "--listen", "tcp://127.0.0.1:9"] + flags)
        #expect(result.status == 64 && result.error.contains(message), "\(result.error)")
    }

    @Test("a --columns key path the coordinator's model lacks is refused, naming it, before anything is fetched")
    func unknownColumn() async throws {
        try await FetchCommandTests.withPullRequests { _, endpoints in
            for command in ["fetch", "watch"] {
                let result = try await Binaries.run(
                    "tributary",
                    [command, "--entity", "PullRequest", "--columns", "number,author.nope"]
                        + endpoints.prefix(command == "fetch" ? 2 : 4))
                #expect(result.status != 0, "\(command)")
                #expect(
                    result.error.contains(
                        "--columns: entity 'User' has no attribute or relationship named 'nope' (in 'author.nope')"),
                    "\(command): \(result.error)")
            }
        }
    }
}
