internal import COpenSSL

/// The OpenSSL this process runs on (not the headers it was built with), for `--version`.
public enum TLSLibrary {
    /// `3.0.13 30 Jan 2024`: OpenSSL's version text without its leading name.
    public static var version: String {
        let text = String(cString: OpenSSL_version(Int32(OPENSSL_VERSION)))
        return text.hasPrefix("OpenSSL ") ? String(text.dropFirst("OpenSSL ".count)) : text
    }
}
