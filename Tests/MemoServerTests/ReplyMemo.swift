import MemoModel
import MemoWire

/// The memo a reply carries, or nil (an error, or another message).
func memo(_ reply: Message) -> Memo? {
    if case .memo(let memo) = reply { return memo }
    return nil
}
