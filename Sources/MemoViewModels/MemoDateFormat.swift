import Foundation

/// How the detail scene prints dates: a `DateFormatter` with medium date and time styles in the user's locale.
///
/// With `ko_KR` Foundation on Linux prints `2026. 11. 30. 오전 3:26:13`.
public struct MemoDateFormat: Sendable, Hashable {
    public var locale: Locale
    public var timeZone: TimeZone

    public init(locale: Locale, timeZone: TimeZone = .current) {
        self.locale = locale
        self.timeZone = timeZone
    }

    /// The user's locale from `LC_ALL`, `LC_TIME` or `LANG` (in that order), and the local time zone.
    public static func fromEnvironment(_ environment: [String: String]) -> MemoDateFormat {
        MemoDateFormat(locale: locale(fromEnvironment: environment))
    }

    /// `ko_KR.UTF-8` gives `ko_KR`; unset, `C` and `POSIX` give `en_US_POSIX`.
    /// - Parameter names: the variables to read, strongest first (LC_MESSAGES in place of LC_TIME for words).
    public static func locale(
        fromEnvironment environment: [String: String], names: [String] = ["LC_ALL", "LC_TIME", "LANG"]
    ) -> Locale {
        guard let value = names.lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) else {
            return Locale(identifier: "en_US_POSIX")
        }
        let identifier = value.split(separator: ".").first.map(String.init) ?? value
        let bare = identifier.split(separator: "@").first.map(String.init) ?? identifier
        if bare == "C" || bare == "POSIX" || bare.isEmpty { return Locale(identifier: "en_US_POSIX") }
        return Locale(identifier: bare)
    }

    public func string(from date: Date) -> String {
        // A formatter per call: DateFormatter is a mutable class, and this runs rarely (once per change shown).
        let formatter = DateFormatter()
        formatter.locale = locale
        formatter.timeZone = timeZone
        formatter.dateStyle = .medium
        formatter.timeStyle = .medium
        return formatter.string(from: date)
    }
}
