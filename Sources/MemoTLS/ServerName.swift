#if canImport(Glibc)
import Glibc
#endif

/// What kind of name a client was told to reach the server by: an address literal is checked against the
/// certificate's IP subjectAltNames, anything else is sent as SNI and checked as a DNS name.
package enum ServerName {
    /// Whether `host` is an IPv4 or IPv6 literal.
    package static func isIPAddress(_ host: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
    }
}
