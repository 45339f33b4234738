internal import COpenSSL

/// How OpenSSL's memory is handled in this process.
public enum TLSMemory {
    /// Makes every block OpenSSL frees be wiped first (its whole usable size), so that the session secrets an
    /// `SSL` held do not stay in freed heap after the record layer takes over. Call before anything else uses
    /// OpenSSL (OpenSSL accepts new allocation functions only before its first allocation).
    /// - Returns: whether the wiping allocator is in place.
    @discardableResult
    public static func wipeFreedMemory() -> Bool {
        CMemoSSL_install_wiping_allocator() == 1
    }
}
