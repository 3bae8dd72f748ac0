import Foundation
import TributaryProtocol

extension Tributary_V1_Column {
    /// This column's first row repeated `rows` times: a batch update's value as the column of every object it
    /// changes.
    package func repeated(rows: Int) -> Tributary_V1_Column {
        var out = Tributary_V1_Column()
        out.name = name
        if let value = ints.first { out.ints = Array(repeating: value, count: rows) }
        if let value = doubles.first { out.doubles = Array(repeating: value, count: rows) }
        if let value = strings.first { out.strings = Array(repeating: value, count: rows) }
        if let value = blobs.first { out.blobs = Array(repeating: value, count: rows) }
        if fixed16.count >= 16 {
            let value = fixed16.prefix(16)
            out.fixed16 = Data(capacity: rows * 16)
            for _ in 0..<rows { out.fixed16.append(value) }
        }
        if NullBitmap.isNull(nulls, row: 0) {
            var nulls = NullBitmap(rows: rows)
            for row in 0..<rows { nulls.set(row) }
            out.nulls = nulls.data
        }
        return out
    }
}
