/// HTTP dates (RFC 9110 §5.6.7) as Unix time in seconds.
///
/// Hand-written rather than `DateFormatter`: it is locale-free, allocation-light, has no
/// global state to share across threads, and rejects impossible dates instead of rolling
/// them over (DateFormatter happily reads "31 Feb" as 3 March).
package enum HTTPDate {
  /// Parses the three formats recipients must accept; nil for anything else.
  ///
  /// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT` (the only one senders may use)
  /// - obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`; two-digit years 00–69 mean
  ///   2000–2069 and 70–99 mean 1970–1999 (as RFC 6265 reads them), without consulting a clock
  /// - asctime: `Sun Nov  6 08:49:37 1994`
  ///
  /// Names and `GMT` are matched case-insensitively; the weekday is checked to be a weekday
  /// name but not checked against the date. Fields are range-checked, including the day
  /// against the month's length (leap years included); a second of 60 (leap second) is
  /// accepted and lands on the next minute.
  package static func parse(_ text: String) -> Int64? {
    var scanner = ByteScanner(text)
    scanner.skipWhitespace()
    let dayName = scanner.readLetters()
    let year: Int64
    let month: Int64
    let day: Int64
    let time: (hour: Int64, minute: Int64, second: Int64)

    if scanner.consume(UInt8(ascii: ",")) {
      guard scanner.consume(0x20) else { return nil }
      if dayName.count == 3, shortDayNames.contains(where: { matches(dayName, $0) }) {
        // IMF-fixdate: day SP month SP year SP time SP GMT
        guard let d = scanner.readNumber(minDigits: 2, maxDigits: 2), scanner.consume(0x20),
          let m = readMonth(&scanner), scanner.consume(0x20),
          let y = scanner.readNumber(minDigits: 4, maxDigits: 4), scanner.consume(0x20),
          let t = readTime(&scanner)
        else { return nil }
        (day, month, year, time) = (d, m, y, t)
      } else if longDayNames.contains(where: { matches(dayName, $0) }) {
        // RFC 850: day "-" month "-" 2DIGIT SP time SP GMT
        guard let d = scanner.readNumber(minDigits: 2, maxDigits: 2), scanner.consume(UInt8(ascii: "-")),
          let m = readMonth(&scanner), scanner.consume(UInt8(ascii: "-")),
          let yy = scanner.readNumber(minDigits: 2, maxDigits: 2), scanner.consume(0x20),
          let t = readTime(&scanner)
        else { return nil }
        (day, month, year, time) = (d, m, yy < 70 ? 2000 + yy : 1900 + yy, t)
      } else {
        return nil
      }
      guard scanner.consume(0x20), scanner.consumeCaseInsensitive("GMT") else { return nil }
    } else {
      // asctime: day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time SP year
      guard dayName.count == 3, shortDayNames.contains(where: { matches(dayName, $0) }),
        scanner.consume(0x20), let m = readMonth(&scanner), scanner.consume(0x20)
      else { return nil }
      let d: Int64?
      if scanner.consume(0x20) {
        d = scanner.readNumber(minDigits: 1, maxDigits: 1)
      } else {
        d = scanner.readNumber(minDigits: 2, maxDigits: 2)
      }
      guard let d, scanner.consume(0x20), let t = readTime(&scanner), scanner.consume(0x20),
        let y = scanner.readNumber(minDigits: 4, maxDigits: 4)
      else { return nil }
      (day, month, year, time) = (d, m, y, t)
    }

    scanner.skipWhitespace()
    guard scanner.isAtEnd, day >= 1, day <= daysInMonth(month, year: year),
      time.hour < 24, time.minute < 60, time.second <= 60
    else { return nil }
    // Cannot overflow: years are at most 4 digits.
    let days = daysFromCivil(year: year, month: month, day: day)
    return days * 86_400 + time.hour * 3_600 + time.minute * 60 + time.second
  }

  /// Formats Unix time as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
  ///
  /// Nil outside years 0000–9999, which the fixed four-digit year cannot express.
  package static func format(_ unixTime: Int64) -> String? {
    let (days, secondOfDay) = floorDivide(unixTime, by: 86_400)
    let (year, month, day) = civilFromDays(days)
    guard year >= 0, year <= 9_999 else { return nil }
    let weekday = Int(floorDivide(days + 4, by: 7).remainder)  // 1970-01-01 was a Thursday.
    var text = shortDayNames[weekday] + ", "
    text += twoDigits(day) + " " + monthNames[Int(month) - 1] + " "
    text += twoDigits(year / 100) + twoDigits(year % 100) + " "
    text += twoDigits(secondOfDay / 3_600) + ":" + twoDigits(secondOfDay / 60 % 60) + ":"
    text += twoDigits(secondOfDay % 60) + " GMT"
    return text
  }

  // MARK: - Calendar math (proleptic Gregorian, after Howard Hinnant's algorithms)

  /// Days since 1970-01-01 for a civil date. Valid for any year that keeps the products in range.
  package static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
  }

  /// The civil date of a day count since 1970-01-01. Safe for every day an `Int64` of
  /// seconds can reach.
  package static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }

  package static func isLeapYear(_ year: Int64) -> Bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
  }

  package static func daysInMonth(_ month: Int64, year: Int64) -> Int64 {
    switch month {
    case 2: isLeapYear(year) ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }

  // MARK: - Private

  private static let shortDayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
  private static let longDayNames = [
    "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
  ]
  private static let monthNames = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
  ]

  private static func matches(_ bytes: ArraySlice<UInt8>, _ name: String) -> Bool {
    bytes.count == name.utf8.count
      && zip(bytes, name.utf8).allSatisfy { ByteScanner.lowercased($0) == ByteScanner.lowercased($1) }
  }

  /// Reads a three-letter month name as 1...12.
  private static func readMonth(_ scanner: inout ByteScanner) -> Int64? {
    let letters = scanner.readLetters()
    guard let index = monthNames.firstIndex(where: { matches(letters, $0) }) else { return nil }
    return Int64(index + 1)
  }

  /// Reads `HH:MM:SS` (ranges are checked by the caller).
  private static func readTime(_ scanner: inout ByteScanner) -> (hour: Int64, minute: Int64, second: Int64)? {
    guard let hour = scanner.readNumber(minDigits: 2, maxDigits: 2), scanner.consume(UInt8(ascii: ":")),
      let minute = scanner.readNumber(minDigits: 2, maxDigits: 2), scanner.consume(UInt8(ascii: ":")),
      let second = scanner.readNumber(minDigits: 2, maxDigits: 2)
    else { return nil }
    return (hour, minute, second)
  }

  /// Division rounding toward negative infinity, so times before 1970 land on the right day.
  private static func floorDivide(_ value: Int64, by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
    var (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
    if remainder < 0 {
      quotient -= 1
      remainder += divisor
    }
    return (quotient, remainder)
  }

  private static func twoDigits(_ value: Int64) -> String {
    value < 10 ? "0" + String(value) : String(value)
  }
}
