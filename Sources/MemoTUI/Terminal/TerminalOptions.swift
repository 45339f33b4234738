import Foundation
import MemoViewModels

/// How the terminal front end looks and behaves; `fromEnvironment` reads the usual variables.
public struct TerminalOptions: Sendable {
    /// False when `NO_COLOR` is set (to anything non-empty): only bold and reverse are used.
    public var colorEnabled: Bool
    /// How dates are printed (locale from LC_ALL / LC_TIME / LANG).
    public var dateFormat: MemoDateFormat
    /// The words on screen (Korean or English), from LC_ALL / LC_MESSAGES / LANG or `--locale`.
    public var strings: Strings
    /// How long to wait after ESC for the rest of an escape sequence before calling it the Escape key.
    public var escapeTimeoutMilliseconds: Int32
    /// The command Ctrl-E runs with the file's path: $VISUAL, $EDITOR, or vi.
    public var editorCommand: String
    /// How long a save may go unanswered before the compose scene says so and offers to retry or keep it as
    /// pending (the save itself goes on).
    public var saveTimeout: Duration = .seconds(3)
    /// Run once the scenes are on screen and every subject is listened to (`StatusSource.refusals` included).
    public var onReady: (@Sendable () -> Void)?

    public init(
        colorEnabled: Bool = true,
        dateFormat: MemoDateFormat = MemoDateFormat(locale: Locale(identifier: "en_US_POSIX")),
        escapeTimeoutMilliseconds: Int32 = 50,
        editorCommand: String = "vi",
        strings: Strings = .english
    ) {
        self.colorEnabled = colorEnabled
        self.dateFormat = dateFormat
        self.strings = strings
        self.escapeTimeoutMilliseconds = escapeTimeoutMilliseconds
        self.editorCommand = editorCommand
    }

    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> TerminalOptions {
        let editor = [environment["VISUAL"], environment["EDITOR"]].compactMap { $0 }.first { !$0.isEmpty }
        return TerminalOptions(
            colorEnabled: (environment["NO_COLOR"] ?? "").isEmpty,
            dateFormat: MemoDateFormat.fromEnvironment(environment),
            editorCommand: editor ?? "vi",
            strings: Strings.forLocale(MemoDateFormat.locale(fromEnvironment: environment, names: messageVariables)))
    }

    /// Where the language of messages comes from, strongest first (as gettext reads them).
    static let messageVariables = ["LC_ALL", "LC_MESSAGES", "LANG"]

    /// Sets the locale of dates and words at once (`--locale ko_KR`).
    public mutating func setLocale(_ locale: Locale) {
        dateFormat.locale = locale
        strings = Strings.forLocale(locale)
    }
}
