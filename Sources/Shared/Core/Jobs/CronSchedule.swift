import Foundation

/// When a schedule fires: a cron expression read in a time zone.
///
/// Five fields (minute, hour, day of month, month, day of week), or six with seconds first; each field a list of
/// `*`, `N`, `N-M`, with an optional `/STEP` (`*/5`, `10-40/10`), months and days of the week also by their English
/// names (`JAN`, `MON`; Sunday is 0 or 7). When both day fields are restricted, a day matching either fires (as
/// Vixie cron). Also `@yearly`, `@monthly`, `@weekly`, `@daily`, `@hourly` and `@every DURATION` (`@every 30s`,
/// `@every 5m`: ticks at whole multiples of the duration since 1970, whatever the time zone).
///
/// Ticks follow the zone's wall clock: when clocks go back, a wall-clock time already passed does not fire again;
/// when they go forward, a time that does not exist that day does not fire.
public struct CronSchedule: Sendable, Equatable {
    /// The expression as given.
    public let expression: String
    /// The zone its fields are read in.
    public let timeZone: TimeZone
    private let rule: Rule

    private enum Rule: Equatable {
        case every(seconds: Int64)
        case fields(Fields)
    }

    private struct Fields: Equatable {
        var seconds: Set<Int>
        var minutes: Set<Int>
        var hours: Set<Int>
        var days: Set<Int>
        var months: Set<Int>
        /// 0 (Sunday) to 6.
        var weekdays: Set<Int>
        var daysRestricted: Bool
        var weekdaysRestricted: Bool
    }

    /// Parses `expression`, whose times are read in the time zone `zoneName`.
    /// - Parameters:
    ///   - expression: 5 fields (minute, hour, day of month, month, day of week), 6 with seconds first, or an alias
    ///     (`@daily`, `@every 30s`, …).
    ///   - zoneName: an IANA name; "UTC" when empty.
    /// - Throws: ``CronError`` naming what is wrong.
    public init(_ expression: String, timeZone zoneName: String = "UTC") throws {
        self.expression = expression
        let name = zoneName.isEmpty ? "UTC" : zoneName
        guard let zone = TimeZone(identifier: name) else {
            throw CronError("unknown time zone '\(name)' (an IANA name such as UTC or Europe/Paris)")
        }
        timeZone = zone
        rule = try Self.parse(expression.trimmingCharacters(in: .whitespaces))
    }

    private static let aliases = [
        "@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *", "@weekly": "0 0 0 * * 0",
        "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *", "@hourly": "0 0 * * * *",
    ]

    private static func parse(_ text: String) throws -> Rule {
        if text.hasPrefix("@every") {
            let duration = text.dropFirst(6).trimmingCharacters(in: .whitespaces)
            guard let seconds = Self.seconds(duration), seconds >= 1, seconds <= 366 * 86_400 else {
                throw CronError("'\(text)': @every takes a duration from 1s to 366 days, e.g. @every 30s or @every 5m")
            }
            return .every(seconds: seconds)
        }
        let expanded = aliases[text.lowercased()] ?? text
        if expanded.hasPrefix("@") {
            throw CronError(
                "'\(text)' is not a known alias (@yearly, @monthly, @weekly, @daily, @hourly, @every DURATION)")
        }
        var parts = expanded.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard parts.count == 5 || parts.count == 6 else {
            throw CronError(
                "'\(text)' has \(parts.count) fields; a cron expression has 5 (minute hour day month weekday) or 6 (seconds first)"
            )
        }
        if parts.count == 5 { parts.insert("0", at: 0) }
        let months = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
        let weekdays = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
        var weekdaySet = try field(parts[5], "day of week", 0...7, names: weekdays, first: 0)
        if weekdaySet.remove(7) != nil { weekdaySet.insert(0) }
        return .fields(
            Fields(
                seconds: try field(parts[0], "second", 0...59),
                minutes: try field(parts[1], "minute", 0...59),
                hours: try field(parts[2], "hour", 0...23),
                days: try field(parts[3], "day of month", 1...31),
                months: try field(parts[4], "month", 1...12, names: months, first: 1),
                weekdays: weekdaySet,
                daysRestricted: !["*", "?"].contains(parts[3]),
                weekdaysRestricted: !["*", "?"].contains(parts[5])))
    }

    /// The values a field allows.
    private static func field(
        _ text: String, _ what: String, _ range: ClosedRange<Int>, names: [String] = [], first: Int = 0
    ) throws -> Set<Int> {
        func value(_ item: Substring) throws -> Int {
            if let number = Int(item), range.contains(number) { return number }
            if let index = names.firstIndex(of: item.uppercased()) { return index + first }
            throw CronError("'\(item)' is not a \(what) (\(range.lowerBound)-\(range.upperBound))")
        }
        var values = Set<Int>()
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = item.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count <= 2, !pieces[0].isEmpty else { throw CronError("'\(item)' is not a \(what) field") }
            var step = 1
            if pieces.count == 2 {
                guard let number = Int(pieces[1]), number >= 1, number <= range.upperBound + 1 else {
                    throw CronError("'\(item)': the step of a \(what) must be from 1 to \(range.upperBound + 1)")
                }
                step = number
            }
            let span: ClosedRange<Int>
            if pieces[0] == "*" || pieces[0] == "?" {
                span = range
            } else if let dash = pieces[0].firstIndex(of: "-") {
                let low = try value(pieces[0][..<dash])
                let high = try value(pieces[0][pieces[0].index(after: dash)...])
                guard low <= high else { throw CronError("'\(item)': the range of a \(what) runs backwards") }
                span = low...high
            } else {
                let start = try value(pieces[0])
                span = start...(pieces.count == 2 ? range.upperBound : start)
            }
            values.formUnion(stride(from: span.lowerBound, through: span.upperBound, by: step))
        }
        return values
    }

    /// `500ms`-free durations: `30s`, `5m`, `2h`, `1d`, or a number of seconds.
    private static func seconds(_ text: String) -> Int64? {
        for (suffix, factor) in [("s", Int64(1)), ("m", 60), ("h", 3600), ("d", 86_400)] where text.hasSuffix(suffix) {
            return Int64(text.dropLast(suffix.count)).map { $0 * factor }
        }
        return Int64(text)
    }

    /// The first tick strictly after `time` (seconds since 1970), or nil when there is none in the next five years
    /// (`0 0 30 2 *`, say).
    public func nextTick(after time: Double) -> Double? {
        switch rule {
        case .every(let seconds):
            let step = Double(seconds)
            return (time / step).rounded(.down) * step + step
        case .fields(let fields):
            return nextTick(after: time, fields)
        }
    }

    private func nextTick(after time: Double, _ fields: Fields) -> Double? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let units: Set<Calendar.Component> = [.year, .month, .day, .hour, .minute, .second, .weekday]
        let afterWall = wallClock(calendar.dateComponents(units, from: Date(timeIntervalSince1970: time)))
        var t = time.rounded(.down) + 1
        let limit = time + 5 * 366 * 86_400
        while t <= limit {
            let date = Date(timeIntervalSince1970: t)
            let parts = calendar.dateComponents(units, from: date)
            let (month, day, hour, minute, second) = (
                parts.month ?? 1, parts.day ?? 1, parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0
            )
            if !fields.months.contains(month) {
                guard let start = calendar.date(from: DateComponents(year: parts.year, month: month + 1, day: 1))
                else { return nil }
                t = start.timeIntervalSince1970
                continue
            }
            let weekday = (parts.weekday ?? 1) - 1
            let dayMatches: Bool
            switch (fields.daysRestricted, fields.weekdaysRestricted) {
            case (true, true): dayMatches = fields.days.contains(day) || fields.weekdays.contains(weekday)
            case (true, false): dayMatches = fields.days.contains(day)
            case (false, true): dayMatches = fields.weekdays.contains(weekday)
            case (false, false): dayMatches = true
            }
            if !dayMatches {
                guard let next = calendar.date(byAdding: .day, value: 1, to: calendar.startOfDay(for: date)) else {
                    return nil
                }
                t = next.timeIntervalSince1970
                continue
            }
            if !fields.hours.contains(hour) {
                t += Double(3600 - minute * 60 - second)
                continue
            }
            if !fields.minutes.contains(minute) {
                t += Double(60 - second)
                continue
            }
            guard fields.seconds.contains(second) else {
                t += 1
                continue
            }
            // Clocks gone back: a wall-clock time at or before the previous one has fired already.
            if wallClock(parts) <= afterWall {
                t += 1
                continue
            }
            return t
        }
        return nil
    }

    /// A local time as one comparable number.
    private func wallClock(_ parts: DateComponents) -> Int64 {
        let date = Int64(parts.year ?? 0) * 10_000 + Int64(parts.month ?? 0) * 100 + Int64(parts.day ?? 0)
        return date * 1_000_000 + Int64(parts.hour ?? 0) * 10_000 + Int64(parts.minute ?? 0) * 100
            + Int64(parts.second ?? 0)
    }
}

/// What is wrong with a cron expression or its time zone.
public struct CronError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
