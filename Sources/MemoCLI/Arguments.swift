/// A command line that was used wrongly; the executables print it with a hint and exit 2.
public struct UsageError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A small argument reader: the executables take what they know and `finish` rejects the rest. The programs
/// hand it a line their `CommandTable` has already checked (`ParsedLine.arguments`), so what it reads is known to
/// be there in the right shape; it converts values (numbers, seconds) with messages that name the option.
///
/// Options are `--name VALUE` or `--name=VALUE`; flags are `--name`; `--` ends options; a lone `-` is a
/// positional argument (standard input).
public struct Arguments: Sendable {
    private var items: [String]
    private var positionalOnlyFrom: Int?

    public init(_ items: [String]) {
        self.items = items
        positionalOnlyFrom = items.firstIndex(of: "--")
        if let index = positionalOnlyFrom { self.items.remove(at: index) }
    }

    private func isOptionPosition(_ index: Int) -> Bool {
        positionalOnlyFrom.map { index < $0 } ?? true
    }

    private mutating func removeItem(at index: Int) {
        items.remove(at: index)
        if let from = positionalOnlyFrom, index < from { positionalOnlyFrom = from - 1 }
    }

    /// True when `--name` is present (and removes it).
    public mutating func flag(_ names: String...) -> Bool {
        var found = false
        var index = 0
        while index < items.count {
            if isOptionPosition(index), names.contains(items[index]) {
                removeItem(at: index)
                found = true
            } else {
                index += 1
            }
        }
        return found
    }

    /// Every value of a repeatable option, in order.
    public mutating func options(_ name: String) throws(UsageError) -> [String] {
        var values: [String] = []
        var index = 0
        while index < items.count {
            guard isOptionPosition(index) else { break }
            let item = items[index]
            if item == name {
                guard index + 1 < items.count else { throw UsageError("\(name) needs a value") }
                values.append(items[index + 1])
                removeItem(at: index)
                removeItem(at: index)
            } else if item.hasPrefix(name + "=") {
                values.append(String(item.dropFirst(name.count + 1)))
                removeItem(at: index)
            } else {
                index += 1
            }
        }
        return values
    }

    /// The value of an option given at most once.
    public mutating func option(_ name: String) throws(UsageError) -> String? {
        let values = try options(name)
        guard values.count <= 1 else { throw UsageError("\(name) is given \(values.count) times") }
        return values.first
    }

    /// An option's value as a whole number in `range`.
    public mutating func integer(
        _ name: String, in range: ClosedRange<Int> = 0...Int.max
    ) throws(UsageError) -> Int? {
        guard let text = try option(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(
                "\(name) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }

    /// An option's value as a number of seconds (fractions allowed), above zero.
    public mutating func seconds(_ name: String) throws(UsageError) -> Double? {
        guard let text = try option(name) else { return nil }
        guard let value = Double(text), value > 0, value.isFinite else {
            throw UsageError("\(name) takes a number of seconds above zero, not '\(text)'")
        }
        return value
    }

    /// The next positional argument (not an option), removed.
    public mutating func positional() -> String? {
        for index in items.indices where !isOptionPosition(index) || !items[index].hasPrefix("--") {
            if isOptionPosition(index), items[index].hasPrefix("-"), items[index] != "-" { continue }
            let value = items[index]
            removeItem(at: index)
            return value
        }
        return nil
    }

    /// The next positional argument, which must be there.
    public mutating func required(_ what: String) throws(UsageError) -> String {
        guard let value = positional() else { throw UsageError("missing \(what)") }
        return value
    }

    /// Throws for anything not taken.
    public func finish() throws(UsageError) {
        guard let first = items.first else { return }
        if first.hasPrefix("-") && first != "-" { throw UsageError("unknown option \(first)") }
        throw UsageError("unexpected argument '\(first)'")
    }
}
