/// A strict JSON parser (RFC 8259) for NDJSON rows, reading UTF-8 bytes straight into ``JSONValue``.
///
/// Foundation's `JSONDecoder` cannot tell `1` from `1.0` or `true` without trying each type in turn, a thrown error
/// per miss, for every value of every row. This parser reads each value once, keeps integers (no fraction, no
/// exponent, within `Int64`) apart from other numbers, and limits nesting so hostile input cannot exhaust the
/// stack.
struct JSONParser {
    /// Why a row is not valid JSON, and where (a 0-based byte offset in the line).
    struct SyntaxError: Error, CustomStringConvertible, Equatable {
        let offset: Int
        let reason: String
        var description: String { "\(reason) at byte \(offset + 1)" }
    }

    /// The deepest nesting of arrays and objects accepted.
    static let maximumDepth = 32
    /// Members an object may have before repeated keys are looked for in a set rather than one by one.
    static let membersComparedOneByOne = 16
    /// Members an object makes room for when it has one: an import row's usually fit.
    static let membersReserved = 8

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Parses one complete JSON value; trailing white space is allowed, anything else is an error.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(SyntaxError) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.error("unexpected text after the value") }
        return value
    }

    // MARK: - Values

    private mutating func parseValue(depth: Int) throws(SyntaxError) -> JSONValue {
        guard let byte = peek() else { throw error("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character '\(Character(Unicode.Scalar(byte)))'")
        }
    }

    private mutating func parseObject(depth: Int) throws(SyntaxError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth)") }
        position += 1
        var object = JSONObject()
        // Repeated keys are found by comparing with the keys so far while the object is small, then by a set.
        var seen: Set<String>?
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return .object(object)
        }
        object.reserveCapacity(Self.membersReserved)
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after key \"\(key)\"") }
            position += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            let repeated: Bool
            if seen != nil {
                repeated = seen?.insert(key).inserted == false
            } else {
                repeated = object.keys.contains(key)
                if object.keys.count == Self.membersComparedOneByOne { seen = Set(object.keys + [key]) }
            }
            guard !repeated else { throw error("duplicate key \"\(key)\"") }
            object.append(key, value)
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                return .object(object)
            default: throw error("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(SyntaxError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth)") }
        position += 1
        var array: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            return .array(array)
        }
        while true {
            skipWhitespace()
            array.append(try parseValue(depth: depth))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                return .array(array)
            default: throw error("expected ',' or ']' in an array")
            }
        }
    }

    // MARK: - Scalars

    private mutating func literal(_ text: StaticString, _ value: JSONValue) throws(SyntaxError) -> JSONValue {
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw error("unexpected end of input") }
        for index in 0..<count where bytes[position + index] != text.utf8Start[index] {
            throw error("invalid literal")
        }
        position += count
        return value
    }

    private mutating func parseNumber() throws(SyntaxError) -> JSONValue {
        let start = position
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), isDigit(first) else { throw error("expected a digit") }
        if first == UInt8(ascii: "0") {
            position += 1
            if let next = peek(), isDigit(next) { throw error("leading zeros are not allowed") }
        } else {
            skipDigits()
        }
        var isInteger = true
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard let digit = peek(), isDigit(digit) else { throw error("expected a digit after '.'") }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard let digit = peek(), isDigit(digit) else { throw error("expected a digit in the exponent") }
            skipDigits()
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .int(integer) }
        guard let number = Double(text), number.isFinite else {
            throw SyntaxError(offset: start, reason: "number out of range")
        }
        return .double(number)
    }

    private mutating func parseString() throws(SyntaxError) -> String {
        position += 1
        let start = position
        // Fast path: no escapes, so the bytes between the quotes are the string.
        var bits: UInt8 = 0
        while let byte = peek(), byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
            guard byte >= 0x20 else { throw error("control character in a string") }
            bits |= byte
            position += 1
        }
        guard let stop = peek() else { throw error("unterminated string") }
        if stop == UInt8(ascii: "\"") {
            let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
            position += 1
            // ASCII is valid UTF-8 as it stands; only other bytes need the (slower, generic) validation.
            if bits < 0x80 { return String(decoding: slice, as: UTF8.self) }
            return try validated(slice, at: start)
        }
        var scalars = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while true {
            guard let byte = peek() else { throw error("unterminated string") }
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return try scalars.withUnsafeBufferPointer { buffer throws(SyntaxError) in
                    try validated(buffer, at: start)
                }
            case UInt8(ascii: "\\"):
                try appendEscape(to: &scalars)
            case 0..<0x20:
                throw error("control character in a string")
            default:
                scalars.append(byte)
            }
        }
    }

    private mutating func appendEscape(to output: inout [UInt8]) throws(SyntaxError) {
        guard let escape = peek() else { throw error("unterminated escape") }
        position += 1
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hexQuad()
            if (0xD800..<0xDC00).contains(scalar) {
                guard peek() == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u")
                else { throw error("unpaired surrogate") }
                position += 2
                let low = try hexQuad()
                guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw error("unpaired surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
            output.append(contentsOf: String(Character(unicode)).utf8)
        default:
            throw error("invalid escape '\\\(Character(Unicode.Scalar(escape)))'")
        }
    }

    private mutating func hexQuad() throws(SyntaxError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("unterminated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private func validated(_ buffer: UnsafeBufferPointer<UInt8>, at offset: Int) throws(SyntaxError) -> String {
        guard let string = String(validating: buffer, as: UTF8.self) else {
            throw SyntaxError(offset: offset, reason: "invalid UTF-8 in a string")
        }
        return string
    }

    // MARK: - Bytes

    @inline(__always)
    private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while let byte = peek(), isDigit(byte) { position += 1 }
    }

    private mutating func skipWhitespace() {
        while let byte = peek(),
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
                || byte == UInt8(ascii: "\r")
        {
            position += 1
        }
    }

    private func error(_ reason: String) -> SyntaxError { SyntaxError(offset: position, reason: reason) }
}
