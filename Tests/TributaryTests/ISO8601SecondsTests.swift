import Foundation
import Testing

@testable import TributaryCore

/// The import's own reading of `YYYY-MM-DDTHH:MM:SSZ` dates, against Foundation's format style.
@Suite("ISO 8601 dates in whole seconds")
struct ISO8601SecondsTests {
    @Test("every date of the form reads as Foundation reads it: month ends, leap days, century years")
    func sameAsFoundation() throws {
        let style = Date.ISO8601FormatStyle()
        var generator = SystemRandomNumberGenerator()
        // 1900-01-01 to 9999-12-31, at random, and days around each leap rule.
        var seconds = (0..<5_000).map { _ in Int64.random(in: -2_208_988_800...253_402_300_799, using: &generator) }
        let edges = [
            "1900-02-28T23:59:59Z", "1900-03-01T00:00:00Z", "2000-02-29T12:00:00Z", "2000-03-01T00:00:00Z",
            "2100-02-28T00:00:00Z", "2024-02-29T23:59:59Z", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z",
            "9999-12-31T23:59:59Z", "1900-01-01T00:00:00Z",
        ]
        seconds += try edges.map { Int64(try style.parse($0).timeIntervalSince1970) }
        for second in seconds {
            let text = Date(timeIntervalSince1970: Double(second)).formatted(style)
            #expect(ISO8601Seconds.date(text) == (try style.parse(text)), "\(text)")
        }
    }

    @Test("anything else is left to Foundation: fractions, offsets, invalid fields, years before 1900")
    func otherFormsAreNotRead() {
        for text in [
            "2024-05-01T12:00:00.5Z", "2024-05-01T12:00:00+02:00", "2024-05-01 12:00:00Z", "2023-02-29T00:00:00Z",
            "2024-04-31T00:00:00Z", "2024-13-01T00:00:00Z", "2024-00-10T00:00:00Z", "2024-05-00T00:00:00Z",
            "2024-05-01T24:00:00Z", "2024-05-01T12:60:00Z", "2024-05-01T12:00:60Z", "1899-12-31T23:59:59Z",
            "2O24-05-01T12:00:00Z", "2024-05-01T12:00:00z", "",
        ] {
            #expect(ISO8601Seconds.date(text) == nil, "\(text)")
        }
    }
}
