#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/rand.h>

// Macros Swift cannot import become small inline functions with the CMemoSSL_ prefix.
static inline long CMemoSSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long CMemoSSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long CMemoSSL_set_mode(SSL *ssl, long mode) { return SSL_set_mode(ssl, mode); }
static inline long CMemoSSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline size_t CMemoSSL_BIO_pending(BIO *bio) { return BIO_ctrl_pending(bio); }
static inline long CMemoSSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long CMemoSSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline size_t CMemoSSL_BIO_mem_capacity(BIO *bio) {
    BUF_MEM *mem = NULL;
    BIO_get_mem_ptr(bio, &mem);
    return mem == NULL ? 0 : mem->max;
}
static inline EVP_PKEY *CMemoSSL_EC_P256_generate(void) { return EVP_EC_gen("P-256"); }
static inline void CMemoSSL_free(void *pointer) { OPENSSL_free(pointer); }
static inline int CMemoSSL_MBSTRING_UTF8(void) { return MBSTRING_UTF8; }
// SSL_OP_* are built with SSL_OP_BIT(n), which Swift cannot import.
static inline uint64_t CMemoSSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t CMemoSSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline uint64_t CMemoSSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }
#endif
