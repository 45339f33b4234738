internal import COpenSSL

// Settings no configuration offers, for tests that need a peer the service never is.
extension TLSContext {
    /// Makes a server send `count` TLS 1.3 session tickets after each handshake (a server context sends none).
    /// Tickets are sealed by OpenSSL under the server's application key, which the hand-off guard must notice.
    func sendSessionTickets(_ count: Int) {
        _ = SSL_CTX_set_num_tickets(pointer, count)
    }

    /// Replaces the TLS 1.2 cipher list (OpenSSL's syntax). - Returns: whether OpenSSL accepted it.
    func useTLS12Ciphers(_ list: String) -> Bool {
        TLSError.clearQueue()
        defer { TLSError.clearQueue() }
        return SSL_CTX_set_cipher_list(pointer, list) == 1
    }
}
