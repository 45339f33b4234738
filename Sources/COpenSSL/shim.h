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
static inline uint64_t CMemoSSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }

#include <openssl/decoder.h>
// Loads a PEM private key asking OpenSSL's decoders for an EC key first, then for any key as
// SSL_CTX_use_PrivateKey_file does. Why: OpenSSL 3.0 builds a decoder chain for every key type it knows before
// reading a key of unknown type, about 3.3 million instructions of the 5.8 million a P-256 key costs (callgrind),
// which every `memo-client` command pays once at start; the keys `memo-server certs` makes are EC. Any other key
// (RSA, Ed25519, an encrypted one) fails the first try quietly and takes the general path, whose errors are the
// ones reported.
static inline EVP_PKEY *CMemoSSL_read_EC_key(const char *path) {
    EVP_PKEY *key = NULL;
    OSSL_DECODER_CTX *decoder =
        OSSL_DECODER_CTX_new_for_pkey(&key, "PEM", NULL, "EC", EVP_PKEY_KEYPAIR, NULL, NULL);
    BIO *file = decoder == NULL ? NULL : BIO_new_file(path, "r");
    if (file == NULL || OSSL_DECODER_from_bio(decoder, file) != 1) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    BIO_free(file);
    OSSL_DECODER_CTX_free(decoder);
    return key;
}
static inline int CMemoSSL_CTX_use_PrivateKey_file_EC_first(SSL_CTX *ctx, const char *path) {
    EVP_PKEY *key = CMemoSSL_read_EC_key(path);
    int used = key == NULL ? 0 : SSL_CTX_use_PrivateKey(ctx, key);
    EVP_PKEY_free(key);
    if (used == 1) { return 1; }
    ERR_clear_error();
    return SSL_CTX_use_PrivateKey_file(ctx, path, SSL_FILETYPE_PEM);
}
// The same for one connection (the lazy client material below).
static inline int CMemoSSL_use_PrivateKey_file_EC_first(SSL *ssl, const char *path) {
    EVP_PKEY *key = CMemoSSL_read_EC_key(path);
    int used = key == NULL ? 0 : SSL_use_PrivateKey(ssl, key);
    EVP_PKEY_free(key);
    if (used == 1) { return 1; }
    ERR_clear_error();
    return SSL_use_PrivateKey_file(ssl, path, SSL_FILETYPE_PEM);
}

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
// A client's certificate, key and trusted CA loaded when a handshake first needs them, not when the context is
// made (TLSConfiguration.deferClientMaterial). A resumed TLS 1.3 handshake needs none of them: the server asks
// for no certificate and sends none to verify. The certificate and key are loaded into the connection (SSL),
// never into the shared SSL_CTX (which SSL_new copies from and other threads may be reading), by the certificate
// callback, which OpenSSL's client calls only when the server asks for a certificate (a full handshake). The CA
// goes into the context's X509 store (which locks itself) once, by the verification callback, which OpenSSL
// calls in place of X509_verify_cert when the server's certificate is to be verified; the verification itself is
// then X509_verify_cert's, as without the callback.
typedef struct {
    pthread_mutex_t lock;
    char *chain;  // NULL: no certificate to present
    char *key;
    char *ca;     // NULL: no CA to load here
    int caLoaded;
    // How many times each was loaded (for tests: a resumed handshake loads neither).
    int certificateLoads;
    int caLoads;
    // How many times a load failed (the engine then reports what an eager load would have said).
    int loadFailures;
} CMemoSSL_LazyClient;

static inline char *CMemoSSL_copy_string(const char *text) { return text == NULL ? NULL : strdup(text); }
static inline CMemoSSL_LazyClient *CMemoSSL_lazy_client_new(const char *chain, const char *key, const char *ca) {
    CMemoSSL_LazyClient *lazy = calloc(1, sizeof(CMemoSSL_LazyClient));
    if (lazy == NULL) return NULL;
    pthread_mutex_init(&lazy->lock, NULL);
    lazy->chain = CMemoSSL_copy_string(chain);
    lazy->key = CMemoSSL_copy_string(key);
    lazy->ca = CMemoSSL_copy_string(ca);
    return lazy;
}
static inline void CMemoSSL_lazy_client_free(CMemoSSL_LazyClient *lazy) {
    if (lazy == NULL) return;
    pthread_mutex_destroy(&lazy->lock);
    free(lazy->chain);
    free(lazy->key);
    free(lazy->ca);
    free(lazy);
}
// The counters above, read together under the lock.
typedef struct {
    int certificateLoads;
    int caLoads;
    int loadFailures;
} CMemoSSL_LazyCounts;
static inline CMemoSSL_LazyCounts CMemoSSL_lazy_client_counts(CMemoSSL_LazyClient *lazy) {
    pthread_mutex_lock(&lazy->lock);
    CMemoSSL_LazyCounts counts = { lazy->certificateLoads, lazy->caLoads, lazy->loadFailures };
    pthread_mutex_unlock(&lazy->lock);
    return counts;
}
static inline void CMemoSSL_lazy_client_count(CMemoSSL_LazyClient *lazy, int *counter) {
    pthread_mutex_lock(&lazy->lock);
    *counter += 1;
    pthread_mutex_unlock(&lazy->lock);
}
// SSL_CTX_set_cert_cb's callback: the server asked for our certificate. 1 to go on, 0 to fail the handshake
// (OpenSSL's queue then holds why the file could not be used).
static inline int CMemoSSL_lazy_client_certificate(SSL *ssl, void *arg) {
    CMemoSSL_LazyClient *lazy = arg;
    if (lazy->chain == NULL || SSL_get_certificate(ssl) != NULL) return 1;
    if (SSL_use_certificate_chain_file(ssl, lazy->chain) != 1 || lazy->key == NULL
        || CMemoSSL_use_PrivateKey_file_EC_first(ssl, lazy->key) != 1 || SSL_check_private_key(ssl) != 1) {
        CMemoSSL_lazy_client_count(lazy, &lazy->loadFailures);
        return 0;
    }
    CMemoSSL_lazy_client_count(lazy, &lazy->certificateLoads);
    return 1;
}
// SSL_CTX_set_cert_verify_callback's callback: the server's certificate is to be verified.
static inline int CMemoSSL_lazy_client_verify(X509_STORE_CTX *verify, void *arg) {
    CMemoSSL_LazyClient *lazy = arg;
    pthread_mutex_lock(&lazy->lock);
    int loaded = lazy->caLoaded;
    if (!loaded && lazy->ca != NULL) {
        loaded = X509_STORE_load_file(X509_STORE_CTX_get0_store(verify), lazy->ca) == 1;
        if (loaded) {
            lazy->caLoaded = 1;
            lazy->caLoads += 1;
        } else {
            lazy->loadFailures += 1;
        }
    }
    pthread_mutex_unlock(&lazy->lock);
    if (!loaded) {
        X509_STORE_CTX_set_error(verify, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
        return 0;
    }
    return X509_verify_cert(verify);
}
// Installs both callbacks on a client context; `lazy` must outlive the context.
static inline void CMemoSSL_CTX_set_lazy_client(SSL_CTX *ctx, CMemoSSL_LazyClient *lazy) {
    SSL_CTX_set_cert_cb(ctx, CMemoSSL_lazy_client_certificate, lazy);
    SSL_CTX_set_cert_verify_callback(ctx, CMemoSSL_lazy_client_verify, lazy);
}

#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <string.h>

// TLS 1.3 traffic secrets, captured during the handshake so that the engine can protect records itself once
// the handshake is over (TLSRecordLayer.swift). OpenSSL hands them out only through the key log callback,
// which gets the SSL and one NSS key log line: "<LABEL> <client random hex> <secret hex>".
typedef struct {
    unsigned char client[EVP_MAX_MD_SIZE];
    unsigned char server[EVP_MAX_MD_SIZE];
    size_t clientLength;
    size_t serverLength;
    // Set by the message callback: our Finished has been written, and then whether any message of ours came
    // after it. In TLS 1.3 everything after our Finished is sealed under our application key, so a record there
    // means OpenSSL has used sequence numbers of that key (a NewSessionTicket, say) and the session must stay
    // with OpenSSL: a record layer starting again at 0 would repeat AEAD nonces.
    int finishedWritten;
    int sealedAfterFinished;
    // Records we wrote after our Finished that carried only NewSessionTickets (a server's TLS 1.3 tickets):
    // the sequence numbers of our application key they used, at which the record layer continues.
    uint64_t ticketRecordsAfterFinished;
} CMemoSSL_TrafficSecrets;

static inline int CMemoSSL_hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Parses the secret after the second space of `line` into `out`; returns its length, or 0 if malformed.
static inline size_t CMemoSSL_parse_secret(const char *line, unsigned char *out) {
    const char *p = strchr(line, ' ');
    if (p == NULL) return 0;
    p = strchr(p + 1, ' ');
    if (p == NULL) return 0;
    p += 1;
    size_t n = 0;
    while (p[0] != '\0' && p[1] != '\0' && n < EVP_MAX_MD_SIZE) {
        int hi = CMemoSSL_hex_value(p[0]), lo = CMemoSSL_hex_value(p[1]);
        if (hi < 0 || lo < 0) return 0;
        out[n++] = (unsigned char)(hi * 16 + lo);
        p += 2;
    }
    return p[0] == '\0' ? n : 0;
}

static inline void CMemoSSL_keylog(const SSL *ssl, const char *line) {
    CMemoSSL_TrafficSecrets *secrets = SSL_get_ex_data(ssl, 0);  // index 0 is the application's (app data)
    if (secrets == NULL) return;
    static const char client[] = "CLIENT_TRAFFIC_SECRET_0 ";
    static const char server[] = "SERVER_TRAFFIC_SECRET_0 ";
    if (strncmp(line, client, sizeof client - 1) == 0) {
        secrets->clientLength = CMemoSSL_parse_secret(line, secrets->client);
    } else if (strncmp(line, server, sizeof server - 1) == 0) {
        secrets->serverLength = CMemoSSL_parse_secret(line, secrets->server);
    }
}

static inline void CMemoSSL_message(
    int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl, void *arg) {
    (void)version;
    (void)arg;
    CMemoSSL_TrafficSecrets *secrets = SSL_get_ex_data(ssl, 0);
    if (secrets == NULL || !write_p || content_type == SSL3_RT_INNER_CONTENT_TYPE) return;
    // A record's header is reported when the record is sealed, before the message it carries (OpenSSL writes
    // one handshake message per record): a header after our Finished is one sequence number of our
    // application key used.
    if (content_type == SSL3_RT_HEADER) {
        if (secrets->finishedWritten) secrets->ticketRecordsAfterFinished += 1;
        return;
    }
    if (secrets->finishedWritten) {
        // A NewSessionTicket only moves the sequence on; anything else (a KeyUpdate, an alert) keeps the session
        // with OpenSSL.
        int ticket = content_type == SSL3_RT_HANDSHAKE && len > 0
            && ((const unsigned char *)buf)[0] == SSL3_MT_NEWSESSION_TICKET;
        if (!ticket) secrets->sealedAfterFinished = 1;
    } else if (content_type == SSL3_RT_HANDSHAKE && len > 0 && ((const unsigned char *)buf)[0] == SSL3_MT_FINISHED) {
        secrets->finishedWritten = 1;
    }
}

static inline void CMemoSSL_CTX_capture_traffic_secrets(SSL_CTX *ctx) {
    SSL_CTX_set_keylog_callback(ctx, CMemoSSL_keylog);
    SSL_CTX_set_msg_callback(ctx, CMemoSSL_message);
}
static inline int CMemoSSL_set_traffic_secrets(SSL *ssl, CMemoSSL_TrafficSecrets *secrets) {
    return SSL_set_ex_data(ssl, 0, secrets);
}
// STACK_OF(X509_REVOKED) accessors are macro-generated; these two keep Swift away from the stack type.
static inline int CMemoSSL_CRL_revoked_count(X509_CRL *crl) {
    STACK_OF(X509_REVOKED) *revoked = X509_CRL_get_REVOKED(crl);
    return revoked == NULL ? 0 : sk_X509_REVOKED_num(revoked);
}
static inline const X509_REVOKED *CMemoSSL_CRL_revoked_at(X509_CRL *crl, int index) {
    return sk_X509_REVOKED_value(X509_CRL_get_REVOKED(crl), index);
}
#include <malloc.h>
#include <stdlib.h>

// OpenSSL's allocations through functions that wipe a block before it is freed, so that the secrets in an SSL
// (traffic secrets, the exporter secret, IVs) do not stay in freed heap after a hand-off: OpenSSL 3.0's
// SSL_free does not cleanse them. The whole usable size is wiped, not only what was asked for.
static inline void *CMemoSSL_wiping_malloc(size_t size, const char *file, int line) {
    (void)file;
    (void)line;
    return malloc(size);
}
static inline void CMemoSSL_wiping_free(void *block, const char *file, int line) {
    (void)file;
    (void)line;
    if (block == NULL) return;
    OPENSSL_cleanse(block, malloc_usable_size(block));
    free(block);
}
static inline void *CMemoSSL_wiping_realloc(void *block, size_t size, const char *file, int line) {
    if (block == NULL) return CMemoSSL_wiping_malloc(size, file, line);
    if (size == 0) {
        CMemoSSL_wiping_free(block, file, line);
        return NULL;
    }
    // Always a new block: realloc may move the data and free the old block without wiping it.
    size_t old = malloc_usable_size(block);
    void *moved = malloc(size);
    if (moved == NULL) return NULL;
    memcpy(moved, block, old < size ? old : size);
    CMemoSSL_wiping_free(block, file, line);
    return moved;
}
/// Initialises libcrypto without the exit handler that frees all its state (OPENSSL_cleanup). Takes effect only as
/// the process's first OpenSSL initialisation; returns 1 on success.
static inline int CMemoSSL_init_without_cleanup_at_exit(void) {
    return OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}
/// Returns 1 when installed; 0 when OpenSSL has already allocated (it must be the process's first OpenSSL call).
static inline int CMemoSSL_install_wiping_allocator(void) {
    return CRYPTO_set_mem_functions(CMemoSSL_wiping_malloc, CMemoSSL_wiping_realloc, CMemoSSL_wiping_free);
}

static inline int CMemoSSL_CTRL_AEAD_SET_TAG(void) { return EVP_CTRL_AEAD_SET_TAG; }

#include <openssl/core_names.h>
#include <openssl/params.h>

// A record's nonce for a keyed AES-GCM context without re-initialising it (TLSRecordLayer.swift). Through
// EVP_CipherInit_ex every IV costs a get_params round (the IV length) in the provider on top of the IV itself;
// AEAD_TLS1_IV_FIXED with the length (size_t)-1 is the provider's "restore the whole IV" case (the length -1 of
// EVP_CTRL_GCM_SET_IV_FIXED), one set_params round. When opening, the expected tag goes in the same round.
// Returns 1 on success; 0 when the provider refused (the caller falls back to EVP_CipherInit_ex).
static inline int CMemoSSL_AEAD_set_nonce(EVP_CIPHER_CTX *ctx, unsigned char *nonce, unsigned char *tag,
                                          size_t tagLength) {
    OSSL_PARAM params[3] = {
        OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, nonce, (size_t)-1),
        OSSL_PARAM_END, OSSL_PARAM_END,
    };
    if (tag != NULL) params[1] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, tagLength);
    return EVP_CIPHER_CTX_set_params(ctx, params);
}
// The tag after sealing, as one get_params round (EVP_CIPHER_CTX_ctrl builds the same request and translates it).
static inline int CMemoSSL_AEAD_get_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, size_t tagLength) {
    OSSL_PARAM params[2] = { OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, tagLength), OSSL_PARAM_END };
    return EVP_CIPHER_CTX_get_params(ctx, params);
}

// TLS 1.3 session resumption (TLSContext: the server's tickets; TLSEngine: the client's offered session).
// The ticket keys of a server context: 80 bytes (key name, HMAC key, AES key), the same for every context of one
// process so that a reload of the certificates keeps clients' tickets good.
static inline long CMemoSSL_CTX_set_ticket_keys(SSL_CTX *ctx, unsigned char *keys, long length) {
    return SSL_CTX_ctrl(ctx, SSL_CTRL_SET_TLSEXT_TICKET_KEYS, length, keys);
}

// A ticket decrypted by a server is used only if the client certificate it carries still verifies against the
// context's trust store NOW: the CA, the validity dates at this moment and, when a CRL is loaded
// (X509_V_FLAG_CRL_CHECK), the list. Without this check OpenSSL resumes on the ticket alone, so a certificate
// revoked or expired since the full handshake would still get in. A ticket that fails is ignored: the
// handshake goes on as a full one, where the certificate is refused with its usual alert.
static inline SSL_TICKET_RETURN CMemoSSL_check_ticket(
    SSL *ssl, SSL_SESSION *session, const unsigned char *keyName, size_t keyNameLength, SSL_TICKET_STATUS status,
    void *arg) {
    (void)keyName;
    (void)keyNameLength;
    (void)arg;
    if (status != SSL_TICKET_SUCCESS && status != SSL_TICKET_SUCCESS_RENEW) return SSL_TICKET_RETURN_IGNORE_RENEW;
    X509 *peer = session == NULL ? NULL : SSL_SESSION_get0_peer(session);
    if (peer == NULL) {
        // A session without a client certificate resumes only where a certificate is not required.
        if (SSL_get_verify_mode(ssl) & SSL_VERIFY_FAIL_IF_NO_PEER_CERT) return SSL_TICKET_RETURN_IGNORE_RENEW;
    } else {
        X509_STORE *store = SSL_CTX_get_cert_store(SSL_get_SSL_CTX(ssl));
        X509_STORE_CTX *verify = X509_STORE_CTX_new();
        int good = verify != NULL && X509_STORE_CTX_init(verify, store, peer, NULL) == 1
            && X509_STORE_CTX_set_default(verify, "ssl_client") == 1 && X509_verify_cert(verify) == 1;
        X509_STORE_CTX_free(verify);
        ERR_clear_error();
        if (!good) return SSL_TICKET_RETURN_IGNORE_RENEW;
    }
    return status == SSL_TICKET_SUCCESS ? SSL_TICKET_RETURN_USE : SSL_TICKET_RETURN_USE_RENEW;
}
static inline int CMemoSSL_CTX_check_tickets_at_resumption(SSL_CTX *ctx) {
    return SSL_CTX_set_session_ticket_cb(ctx, NULL, CMemoSSL_check_ticket, NULL);
}
#endif
