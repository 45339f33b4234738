
/// ISO 8601 timestamps for microsecond times, written and read without Foundation's formatters so that a round
/// trip is exact: `2026-11-30T03:26:13.123456Z` always has six fraction digits and is always UTC.
public enum Timestamp {
    /// The UTC form of `micros` (microseconds since the Unix epoch) with six fraction digits.
    public static func iso8601(micros: Int64) -> String {
        let (seconds, fraction) = floorDivide(micros, 1_000_000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        let hour = secondOfDay / 3600
        let minute = secondOfDay / 60 % 60
        let second = secondOfDay % 60
        if year >= 0 && year <= 9999 {
            // Digits written in place: building it from padded pieces was an eighth of `memo-client list`'s CPU.
            return String(unsafeUninitializedCapacity: 27) { text in
                func put(_ value: Int, _ width: Int, at end: Int) {
                    var value = value
                    for index in stride(from: end - 1, through: end - width, by: -1) {
                        text[index] = UInt8(ascii: "0") + UInt8(value % 10)
                        value /= 10
                    }
                }
                put(Int(year), 4, at: 4)
                put(Int(month), 2, at: 7)
                put(Int(day), 2, at: 10)
                put(Int(hour), 2, at: 13)
                put(Int(minute), 2, at: 16)
                put(Int(second), 2, at: 19)
                put(Int(fraction), 6, at: 26)
                for (index, mark) in [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "."), (26, "Z")] {
                    text[index] = UInt8(ascii: Unicode.Scalar(mark)!)
                }
                return 27
            }
        }
        var text = (year < 0 ? "-" : "+") + pad(abs(year), 6)
        text += "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(hour, 2) + ":" + pad(minute, 2) + ":"
        text += pad(second, 2) + "." + pad(fraction, 6) + "Z"
        return text
    }

    /// Microseconds since the Unix epoch for `YYYY-MM-DDTHH:MM:SS[.f]` followed by `Z` or `±hh:mm`, with 0 to 9
    /// fraction digits (digits past the sixth are dropped); nil for anything else.
    public static func parse(_ text: String) -> Int64? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.digits(4), scanner.take("-"), let month = scanner.digits(2), scanner.take("-"),
            let day = scanner.digits(2), scanner.take("T") || scanner.take("t"), let hour = scanner.digits(2),
            scanner.take(":"), let minute = scanner.digits(2), scanner.take(":"), let second = scanner.digits(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60,
            second < 60
        else { return nil }
        var micros: Int64 = 0
        if scanner.take(".") || scanner.take(",") {
            var count = 0
            while let digit = scanner.digit() {
                count += 1
                if count <= 6 { micros = micros * 10 + Int64(digit) }
            }
            guard (1...9).contains(count) else { return nil }
            for _ in min(count, 6)..<6 { micros *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if scanner.take("Z") || scanner.take("z") {
        } else if let sign = scanner.sign() {
            guard let offsetHours = scanner.digits(2), scanner.take(":"), let offsetMinutes = scanner.digits(2),
                offsetHours < 24, offsetMinutes < 60
            else { return nil }
            offsetSeconds = sign * Int64(offsetHours * 3600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard scanner.atEnd else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - offsetSeconds
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return nil }
        let (sum, overflow2) = product.addingReportingOverflow(micros)
        return overflow2 ? nil : sum
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian; Howard Hinnant's days_from_civil / civil_from_days)

    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int) {
        var quotient = a / b
        var remainder = a % b
        if remainder < 0 {
            quotient -= 1
            remainder += b
        }
        return (quotient, Int(remainder))
    }

    private static func pad<T: BinaryInteger>(_ value: T, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(character.value) else { return false }
            index += 1
            return true
        }

        mutating func digit() -> Int? {
            guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
            defer { index += 1 }
            return Int(bytes[index] - 0x30)
        }

        mutating func digits(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        mutating func sign() -> Int64? {
            if take("+") { return 1 }
            if take("-") { return -1 }
            return nil
        }
    }
}
