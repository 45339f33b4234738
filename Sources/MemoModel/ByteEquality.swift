/// Protocol strings are byte strings: identity and idempotency are decided on their UTF-8 bytes.
///
/// Swift's `String ==` is canonical equivalence, so `가` in NFC (`ea b0 80`) equals its NFD spelling
/// (`e1 84 80 e1 85 a1`); a create retried with the other spelling would then pass for the same memo. Every
/// store (and the client) compares content with these helpers instead.
extension String {
    /// Whether both strings hold exactly the same UTF-8 bytes.
    public func hasSameBytes(as other: String) -> Bool {
        utf8.elementsEqual(other.utf8)
    }
}

extension Memo {
    /// Equal when every field but the author is, content compared as UTF-8 bytes (not by canonical equivalence).
    /// The author is left out: it describes the last change, which the revision already names, and a peer of
    /// protocol version 1 or 2 (or a cache written before authors) knows the memo without it. Compare `author`
    /// itself where it matters.
    public static func == (a: Memo, b: Memo) -> Bool {
        a.id == b.id && a.revision == b.revision && a.insertMicros == b.insertMicros
            && a.updateMicros == b.updateMicros && a.content.hasSameBytes(as: b.content)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(revision)
        hasher.combine(insertMicros)
        hasher.combine(updateMicros)
        hasher.combine(content.utf8.count)
        // Native strings hand out their bytes at once; a bridged one is hashed byte by byte.
        let hashed: Void? = content.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil { for byte in content.utf8 { hasher.combine(byte) } }
    }
}
