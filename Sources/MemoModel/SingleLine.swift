/// `text` as one line: a library's multi-line message (libpq's DETAIL, HINT and CONTEXT lines, OpenSSL's error
/// queue) keeps every line, trimmed, joined with " | ", so that a log line or an error frame stays one line.
public func singleLine(_ text: String) -> String {
    guard text.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) else { return text }
    return text.split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
        .map { $0.trimmingWhitespace() }
        .filter { !$0.isEmpty }
        .joined(separator: " | ")
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return slice
    }
}
