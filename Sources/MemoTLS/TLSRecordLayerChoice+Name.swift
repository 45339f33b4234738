extension TLSRecordLayerChoice {
    /// The names an operator uses: `own` (our record layer after the handshake) and `openssl`.
    public init?(name: String) {
        switch name {
        case "own": self = .handOff
        case "openssl": self = .openSSL
        default: return nil
        }
    }

    public var name: String { self == .handOff ? "own" : "openssl" }
}
