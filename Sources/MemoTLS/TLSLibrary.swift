internal import COpenSSL

/// The OpenSSL this process runs on (not the headers it was built with), for `--version`.
public enum TLSLibrary {
    /// `3.0.13 30 Jan 2024`: OpenSSL's version text without its leading name.
    public static var version: String {
        let text = String(cString: OpenSSL_version(Int32(OPENSSL_VERSION)))
        return text.hasPrefix("OpenSSL ") ? String(text.dropFirst("OpenSSL ".count)) : text
    }

    /// Starts OpenSSL without its exit handler (`OPENSSL_INIT_NO_ATEXIT`): `exit` then leaves OpenSSL's state to the
    /// kernel instead of freeing it piece by piece (OPENSSL_cleanup: 1.4 million instructions, about 4% of a
    /// `memo-client add`), and cannot free it under a thread still using it. For a process that ends with `exit`
    /// and never re-initialises OpenSSL. Call before anything else uses OpenSSL; later it does nothing.
    /// - Returns: whether OpenSSL initialised.
    @discardableResult
    public static func initialiseWithoutCleanupAtExit() -> Bool {
        CMemoSSL_init_without_cleanup_at_exit() == 1
    }
}
