/*
 * tls.c - TLS on connections to shards and replicas, in one place for both
 * (shard.c and replica.c call it): the configuration's `tls:` as
 * Connector/C's own options before connecting, what the connection achieved
 * once made (refused when the mode asks for more), and a failed connection
 * explained when TLS is why.
 *
 * Connector/C 3.3 (Debian 12) and the modes. Tried on it, not assumed:
 *  - MYSQL_OPT_SSL_ENFORCE asks for TLS but, against a server that does not
 *    offer it, connects in plain text without a word. So `required` and
 *    `verify_ca` are checked here once connected (the connection is closed
 *    before any statement); `verify_identity` is refused by the library
 *    itself before authenticating.
 *  - A CA given (MYSQL_OPT_SSL_CA) makes the library verify the server's
 *    chain against it; MYSQL_OPT_SSL_VERIFY_SERVER_CERT adds the host name
 *    check (X509_check_host / X509_check_ip_asc) and verifies the chain
 *    against the system's CAs when no CA is given. So verify_ca (CA, no
 *    name check) and verify_identity (both) are both real, distinct checks.
 *  - An option file's ssl-ca and ssl-verify-server-cert=1 are applied while
 *    connecting, after our options; the bare `ssl-verify-server-cert`
 *    (without =1) is ignored by this version. What the connection achieved
 *    is therefore read back from the handle afterwards, never assumed.
 *  - A MariaDB server with require_secure_transport=ON answers a connection
 *    without TLS with "Access denied" (1045), not with a TLS error; such a
 *    refusal is explained when the connection did not ask for TLS.
 */
#include "internal.h"

#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <string.h>

const char *bs_tls_level_name(bs_tls_level_t l)
{
	switch (l) {
	case BS_TLS_NONE: return "none";
	case BS_TLS_ENCRYPTED: return "encrypted";
	case BS_TLS_CA: return "ca";
	case BS_TLS_IDENTITY: return "identity";
	}
	return "unknown";
}

void bs__tls_apply(MYSQL *m, const bs_tls_conf_t *t)
{
	my_bool yes = 1, no = 0;

	if (t->mode == BS_TLS_MODE_UNSET)
		return; /* Connector/C's defaults and the option file decide */
	if (t->mode == BS_TLS_DISABLED) {
		mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &no);
		return;
	}
	mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &yes);
	if (t->cert)
		mysql_optionsv(m, MYSQL_OPT_SSL_CERT, t->cert);
	if (t->key)
		mysql_optionsv(m, MYSQL_OPT_SSL_KEY, t->key);
	if (t->cipher)
		mysql_optionsv(m, MYSQL_OPT_SSL_CIPHER, t->cipher);
	if (t->versions)
		mysql_optionsv(m, MARIADB_OPT_TLS_VERSION, t->versions);
	/* as the mysql client: preferred and required verify nothing, so the
	 * CA goes only to the modes that verify (given to the library, it
	 * would verify the chain whatever the mode) */
	if (t->ca && (t->mode == BS_TLS_VERIFY_CA || t->mode == BS_TLS_VERIFY_IDENTITY))
		mysql_optionsv(m, MYSQL_OPT_SSL_CA, t->ca);
	mysql_optionsv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, t->mode == BS_TLS_VERIFY_IDENTITY ? &yes : &no);
}

/* What the library was told to verify, after it read any option file. */
static bs_tls_level_t verify_level(MYSQL *m)
{
	my_bool verify = 0;
	const char *ca = NULL, *capath = NULL;

	mysql_get_optionv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
	if (verify)
		return BS_TLS_IDENTITY;
	mysql_get_optionv(m, MYSQL_OPT_SSL_CA, &ca);
	mysql_get_optionv(m, MYSQL_OPT_SSL_CAPATH, &capath);
	return (ca && ca[0]) || (capath && capath[0]) ? BS_TLS_CA : BS_TLS_ENCRYPTED;
}

static bs_tls_level_t needed(bs_tls_mode_t mode)
{
	switch (mode) {
	case BS_TLS_REQUIRED: return BS_TLS_ENCRYPTED;
	case BS_TLS_VERIFY_CA: return BS_TLS_CA;
	case BS_TLS_VERIFY_IDENTITY: return BS_TLS_IDENTITY;
	default: return BS_TLS_NONE;
	}
}

int bs__tls_check(bs_tls_state_t *out, MYSQL *m, const bs_tls_conf_t *t, char *err, size_t size)
{
	const char *version = NULL, *cipher;
	bs_tls_level_t want = needed(t->mode);

	memset(out, 0, sizeof *out);
	if (mariadb_get_infov(m, MARIADB_CONNECTION_TLS_VERSION, &version) == 0 && version && version[0]) {
		cipher = mysql_get_ssl_cipher(m);
		snprintf(out->version, sizeof out->version, "%s", version);
		snprintf(out->cipher, sizeof out->cipher, "%s", cipher ? cipher : "");
		out->level = verify_level(m);
	}
	if (out->level >= want)
		return 0;
	if (out->level == BS_TLS_NONE)
		snprintf(err, size,
		         "TLS: the server does not offer TLS, and tls.mode is %s: "
		         "the connection was closed before any statement",
		         bs_tls_mode_name(t->mode));
	else
		snprintf(err, size,
		         "TLS: tls.mode is %s, but this connection verified only \"%s\" "
		         "(an option file's ssl-* settings override the configuration's): the connection was closed",
		         bs_tls_mode_name(t->mode), bs_tls_level_name(out->level));
	return BS_ECONFIG;
}

/* Whose CAs the server's certificate was checked against (a failed
 * connect leaves the handle's options cleared: from the configuration). */
static void trust_source(char *buf, size_t size, const bs_tls_conf_t *t)
{
	if (t->ca && (t->mode == BS_TLS_VERIFY_CA || t->mode == BS_TLS_VERIFY_IDENTITY))
		snprintf(buf, size, "tls.ca %s", t->ca);
	else
		snprintf(buf, size, "the CAs of the option file's ssl-ca or of the system (no tls.ca)");
}

int bs__tls_connect_error(char *buf, size_t size, MYSQL *m, const bs_tls_conf_t *t, const char *host)
{
	unsigned err = mysql_errno(m);
	const char *msg = mysql_error(m);
	char trust[320];

	if (err == CR_SSL_CONNECTION_ERROR) {
		if (strstr(msg, "Validation of SSL server certificate failed")) {
			snprintf(buf, size,
			         "TLS: name mismatch: the server's certificate does not name %s "
			         "(tls.mode verify_identity checks the host connected to against the certificate's "
			         "names): %s (MySQL error %u)",
			         host ? host : "localhost", msg, err);
			return BS_ECONFIG;
		}
		if (strstr(msg, "SSL is required") || strstr(msg, "does not support")) {
			snprintf(buf, size,
			         "TLS: the server does not offer TLS, and tls.mode is %s: %s (MySQL error %u)",
			         bs_tls_mode_name(t->mode), msg, err);
			return BS_ECONFIG;
		}
		if (strstr(msg, "certificate") || strstr(msg, "issuer")) {
			trust_source(trust, sizeof trust, t);
			snprintf(buf, size,
			         "TLS: untrusted certificate: the server's certificate does not chain to "
			         "%s: %s (MySQL error %u)",
			         trust, msg, err);
			return BS_ECONFIG;
		}
		snprintf(buf, size, "TLS handshake failed: %s (MySQL error %u)", msg, err);
		return 0;
	}
	if (err == ER_ACCESS_DENIED_ERROR && (t->mode == BS_TLS_DISABLED || t->mode == BS_TLS_MODE_UNSET)) {
		snprintf(buf, size,
		         "%s (MySQL error %u); this connection did not ask for TLS (tls.mode %s): "
		         "a server with require_secure_transport=ON refuses such connections with this error",
		         msg, err, bs_tls_mode_name(t->mode));
		return 0;
	}
	if (err == 3159) { /* MySQL's ER_SECURE_TRANSPORT_REQUIRED */
		snprintf(buf, size, "%s (MySQL error %u); tls.mode is %s", msg, err, bs_tls_mode_name(t->mode));
		return BS_ECONFIG;
	}
	snprintf(buf, size, "%s (MySQL error %u)", msg, err);
	return 0;
}
