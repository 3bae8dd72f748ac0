import Foundation

/// One line of the benchmark report: a Tributary figure, the baseline measured in the same run, their ratio.
struct Figure {
    let name: String
    let tributary: Double
    let baseline: Double
    let unit: String
    /// For figures where smaller is better (latency, memory) the ratio is baseline / tributary.
    var smallerIsBetter = false
    var note = ""

    var ratio: Double {
        guard tributary > 0, baseline > 0 else { return 0 }
        return smallerIsBetter ? baseline / tributary : tributary / baseline
    }

    var line: String {
        let text =
            // Names longer than the column are written whole.
            "\(name.padding(toLength: max(22, name.count), withPad: " ", startingAt: 0)) tributary \(Self.format(tributary)) \(unit)"
            + "   baseline \(Self.format(baseline)) \(unit)   ratio \(String(format: "%.3f", ratio))"
        return note.isEmpty ? text : text + "   (\(note))"
    }

    static func format(_ value: Double) -> String {
        if value >= 100 { return Int(value.rounded()).formatted() }
        return String(format: "%.3f", value)
    }
}
