// TLS on the system OpenSSL lives here.
