/*
 * svc_web.c - the web configuration of /metrics: the file Prometheus's
 * exporters take as --web.config.file (the exporter-toolkit's format), so
 * that a scraper set up for node_exporter scrapes the cleaner the same way:
 *
 *   tls_server_config:
 *     cert_file: server-cert.pem      # PEM; relative paths are the file's
 *     key_file: server-key.pem        # directory's, as the toolkit reads them
 *     client_ca_file: ca.pem          # optional, with client_auth_type
 *     client_auth_type: RequireAndVerifyClientCert  # or VerifyClientCertIfGiven,
 *                                                   # NoClientCert (the default)
 *   basic_auth_users:
 *     prometheus: $2y$10$...          # bcrypt, as htpasswd -B writes it
 *
 * What the toolkit knows and this does not do (inline cert/key, TLS
 * versions, cipher suites, client_allowed_sans, http_server_config, the
 * client-auth types that do not verify) is refused by name rather than
 * ignored: a setting an operator relies on is never silently dropped.
 * A key given twice in a mapping (libyaml keeps both pairs) is refused
 * at the repeat. Every error reads FILE:LINE:COL.
 *
 * Passwords are checked with libxcrypt's crypt_r (bcrypt: $2a$, $2b$,
 * $2y$) and compared in constant time. bcrypt at cost 10 takes ~0.1 s and
 * libmicrohttpd serves every connection from one thread, so a password
 * that once matched is remembered per user as an HMAC-SHA256 under a key
 * drawn at load (not the password, and not usable offline without the
 * key): a scrape with it costs a hash, not a bcrypt. An unknown user is
 * checked against a real hash as well, so that the time does not say
 * which users exist.
 */
#include "service.h"

#include <crypt.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <yaml.h>

#define PEM_MAX (1 << 20)

struct svc_web_user {
	char *name, *hash;
	unsigned char ok[32]; /* HMAC of the password that last matched */
	bool have_ok;
};

typedef struct {
	const char *file;
	yaml_document_t *doc;
	char *err;
	size_t size;
} wctx;

static int werr(const wctx *c, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int werr(const wctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(c->err, c->size, "%s:%lu:%lu: %s", c->file, n ? (unsigned long)n->start_mark.line + 1 : 1,
	         n ? (unsigned long)n->start_mark.column + 1 : 1, msg);
	return -1;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A file named in the web config (relative: to the web config's folder),
 * read whole into *out (NUL-terminated). */
static int read_named(char **out, const wctx *c, const yaml_node_t *n, const char *key)
{
	const char *name = scalar(n), *slash = strrchr(c->file, '/');
	char path[4096];
	FILE *f;
	size_t len;
	char *p;

	*out = NULL;
	if (!name || !name[0])
		return werr(c, n, "%s: expected a file name", key);
	if (name[0] == '/' || !slash)
		snprintf(path, sizeof path, "%s", name);
	else
		snprintf(path, sizeof path, "%.*s/%s", (int)(slash - c->file), c->file, name);
	if (!(f = fopen(path, "rb")))
		return werr(c, n, "%s: %s: %s", key, path, strerror(errno));
	if (!(p = malloc(PEM_MAX + 1))) {
		fclose(f);
		return werr(c, n, "out of memory");
	}
	len = fread(p, 1, PEM_MAX + 1, f);
	fclose(f);
	if (len > PEM_MAX) {
		free(p);
		return werr(c, n, "%s: %s: larger than 1 MiB, not a PEM file", key, path);
	}
	p[len] = '\0';
	if (!strstr(p, "-----BEGIN ")) {
		free(p);
		return werr(c, n, "%s: %s: not PEM (no -----BEGIN line)", key, path);
	}
	*out = p;
	return 0;
}

/* libyaml keeps every pair of a mapping, a repeated key too: a key given
 * twice is refused (at the repeat) rather than read twice or half-read. */
static int repeated(const wctx *c, const yaml_node_t *map, const yaml_node_pair_t *p, const char *where)
{
	const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
	const char *key = scalar(k);

	if (!key)
		return 0;
	for (const yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
		const yaml_node_t *pk = yaml_document_get_node(c->doc, q->key);
		const char *prev = scalar(pk);
		if (prev && !strcmp(prev, key))
			return werr(c, k, "%s%sduplicate key \"%s\" (first at line %lu, column %lu)", where,
			            where[0] ? ": " : "", key, (unsigned long)pk->start_mark.line + 1,
			            (unsigned long)pk->start_mark.column + 1);
	}
	return 0;
}

static bool unsupported(const char *k)
{
	static const char *const no[] = { "cert",
		                          "key",
		                          "min_version",
		                          "max_version",
		                          "cipher_suites",
		                          "curve_preferences",
		                          "prefer_server_cipher_suites",
		                          "client_allowed_sans",
		                          NULL };
	for (int i = 0; no[i]; i++)
		if (!strcmp(k, no[i]))
			return true;
	return false;
}

static int parse_tls(svc_web_t *w, const wctx *c, const yaml_node_t *map)
{
	const yaml_node_t *certn = NULL, *cauth = NULL, *can = NULL;
	gnutls_certificate_credentials_t cred = NULL;
	gnutls_datum_t cd, kd;
	int rc;

	if (map->type != YAML_MAPPING_NODE)
		return werr(c, map, "tls_server_config: expected a mapping");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(c->doc, p->key),
				  *v = yaml_document_get_node(c->doc, p->value);
		const char *key = scalar(k);
		if (!key)
			return werr(c, k, "tls_server_config: expected a key");
		if (repeated(c, map, p, "tls_server_config") < 0)
			return -1;
		if (!strcmp(key, "cert_file")) {
			certn = v;
			free(w->cert_pem);
			if (read_named(&w->cert_pem, c, v, "tls_server_config.cert_file") < 0)
				return -1;
		} else if (!strcmp(key, "key_file")) {
			free(w->key_pem);
			if (read_named(&w->key_pem, c, v, "tls_server_config.key_file") < 0)
				return -1;
		} else if (!strcmp(key, "client_ca_file")) {
			can = v;
			free(w->ca_pem);
			if (read_named(&w->ca_pem, c, v, "tls_server_config.client_ca_file") < 0)
				return -1;
		} else if (!strcmp(key, "client_auth_type")) {
			const char *t = scalar(v);
			cauth = v;
			if (t && (!strcmp(t, "NoClientCert") || !t[0]))
				w->client_auth = SVC_WEB_NO_CLIENT_CERT;
			else if (t && !strcmp(t, "VerifyClientCertIfGiven"))
				w->client_auth = SVC_WEB_VERIFY_IF_GIVEN;
			else if (t && !strcmp(t, "RequireAndVerifyClientCert"))
				w->client_auth = SVC_WEB_REQUIRE_AND_VERIFY;
			else if (t && (!strcmp(t, "RequestClientCert") || !strcmp(t, "RequireAnyClientCert")))
				return werr(
					c, v,
					"tls_server_config.client_auth_type: %s (a certificate not verified) is not "
					"supported: use RequireAndVerifyClientCert or VerifyClientCertIfGiven",
					t);
			else
				return werr(c, v,
				            "tls_server_config.client_auth_type: expected NoClientCert, "
				            "VerifyClientCertIfGiven or RequireAndVerifyClientCert");
		} else if (unsupported(key)) {
			return werr(c, k,
			            "tls_server_config.%s: not supported by bagstore's /metrics (it takes cert_file, "
			            "key_file, client_ca_file, client_auth_type)",
			            key);
		} else {
			return werr(c, k,
			            "tls_server_config: unknown key \"%s\" (cert_file, key_file, client_ca_file, "
			            "client_auth_type)",
			            key);
		}
	}
	if (!w->cert_pem || !w->key_pem)
		return werr(c, map, "tls_server_config: cert_file and key_file are both needed");
	if (w->ca_pem && w->client_auth == SVC_WEB_NO_CLIENT_CERT)
		return werr(c, can,
		            "tls_server_config.client_ca_file without client_auth_type: say "
		            "RequireAndVerifyClientCert or VerifyClientCertIfGiven");
	if (!w->ca_pem && w->client_auth != SVC_WEB_NO_CLIENT_CERT)
		return werr(c, cauth,
		            "tls_server_config.client_auth_type: verifying client certificates needs "
		            "client_ca_file");
	/* the pair, checked here so that a mismatch names the file rather
	 * than making libmicrohttpd fail to start without a word */
	cd = (gnutls_datum_t){ (unsigned char *)w->cert_pem, (unsigned)strlen(w->cert_pem) };
	kd = (gnutls_datum_t){ (unsigned char *)w->key_pem, (unsigned)strlen(w->key_pem) };
	if ((rc = gnutls_certificate_allocate_credentials(&cred)) == 0)
		rc = gnutls_certificate_set_x509_key_mem(cred, &cd, &kd, GNUTLS_X509_FMT_PEM);
	if (rc == 0 && w->ca_pem) {
		gnutls_datum_t ad = { (unsigned char *)w->ca_pem, (unsigned)strlen(w->ca_pem) };
		if ((rc = gnutls_certificate_set_x509_trust_mem(cred, &ad, GNUTLS_X509_FMT_PEM)) > 0)
			rc = 0;
		else if (rc == 0)
			rc = GNUTLS_E_NO_CERTIFICATE_FOUND;
		if (rc < 0) {
			gnutls_certificate_free_credentials(cred);
			return werr(c, can, "tls_server_config.client_ca_file: %s", gnutls_strerror(rc));
		}
	}
	if (cred)
		gnutls_certificate_free_credentials(cred);
	if (rc < 0)
		return werr(c, certn, "tls_server_config: cert_file and key_file: %s", gnutls_strerror(rc));
	return 0;
}

static int parse_users(svc_web_t *w, const wctx *c, const yaml_node_t *map)
{
	struct crypt_data *cd = NULL;
	int rc = 0;

	if (map->type != YAML_MAPPING_NODE)
		return werr(c, map, "basic_auth_users: expected a mapping of user names to bcrypt hashes");
	size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	if (!n)
		return 0;
	if (w->users) /* the caller refuses a repeated basic_auth_users */
		return werr(c, map, "basic_auth_users: given twice");
	if (!(w->users = calloc(n, sizeof *w->users)) || !(cd = calloc(1, sizeof *cd)))
		return werr(c, map, "out of memory");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(c->doc, p->key),
				  *v = yaml_document_get_node(c->doc, p->value);
		const char *user = scalar(k), *hash = scalar(v), *h;
		if (!user || !user[0] || strchr(user, ':')) {
			rc = werr(c, k, "basic_auth_users: a user name is a non-empty string without ':'");
			break;
		}
		if ((rc = repeated(c, map, p, "basic_auth_users")) < 0)
			break;
		/* a bcrypt hash hashes: crypt_r fails ("*0", "*1") on anything else */
		if (!hash || strncmp(hash, "$2", 2) != 0 || !(h = crypt_r("", hash, cd)) || h[0] == '*') {
			rc = werr(c, v,
			          "basic_auth_users.%s: expected a bcrypt hash ($2y$..., as htpasswd -B writes it)",
			          user);
			break;
		}
		if (!(w->users[w->nusers].name = strdup(user)) || !(w->users[w->nusers].hash = strdup(hash))) {
			free(w->users[w->nusers].name);
			rc = werr(c, k, "out of memory");
			break;
		}
		w->nusers++;
	}
	free(cd);
	return rc;
}

void svc_web_free(svc_web_t *w)
{
	if (!w)
		return;
	free(w->path);
	free(w->cert_pem);
	if (w->key_pem) {
		explicit_bzero(w->key_pem, strlen(w->key_pem));
		free(w->key_pem);
	}
	free(w->ca_pem);
	for (int k = 0; k < w->nusers; k++) {
		free(w->users[k].name);
		free(w->users[k].hash);
	}
	free(w->users);
	explicit_bzero(w->hmac_key, sizeof w->hmac_key);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

int svc_web_load(svc_web_t **out, const char *path, char *err, size_t size)
{
	wctx c = { .file = path, .err = err, .size = size };
	yaml_parser_t parser;
	yaml_document_t doc;
	svc_web_t *w = NULL;
	const yaml_node_t *root;
	bool parsed = false, tls = false;
	FILE *f = NULL;
	int rc = -1;

	*out = NULL;
	if (!(f = fopen(path, "rb"))) {
		snprintf(err, size, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!(w = calloc(1, sizeof *w))) {
		snprintf(err, size, "out of memory");
		goto done;
	}
	pthread_mutex_init(&w->mu, NULL); /* before anything svc_web_free undoes */
	if (!(w->path = strdup(path))) {
		snprintf(err, size, "out of memory");
		goto done;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, size, "%s:%lu:%lu: %s", path, (unsigned long)parser.problem_mark.line + 1,
		         (unsigned long)parser.problem_mark.column + 1, parser.problem ? parser.problem : "not YAML");
		yaml_parser_delete(&parser);
		goto done;
	}
	yaml_parser_delete(&parser);
	parsed = true;
	c.doc = &doc;
	if (!(root = yaml_document_get_root_node(&doc)) ||
	    (root->type == YAML_SCALAR_NODE && !root->data.scalar.length)) {
		snprintf(err, size,
		         "%s: empty: it sets neither tls_server_config nor basic_auth_users, and would protect "
		         "nothing",
		         path);
		goto done;
	}
	if (root->type != YAML_MAPPING_NODE) {
		werr(&c, root, "expected a mapping (tls_server_config, basic_auth_users)");
		goto done;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(&doc, p->key),
				  *v = yaml_document_get_node(&doc, p->value);
		const char *key = scalar(k);
		if (repeated(&c, root, p, "") < 0)
			goto done;
		if (key && !strcmp(key, "tls_server_config")) {
			if (parse_tls(w, &c, v) < 0)
				goto done;
			tls = true;
		} else if (key && !strcmp(key, "basic_auth_users")) {
			if (parse_users(w, &c, v) < 0)
				goto done;
		} else if (key && !strcmp(key, "http_server_config")) {
			werr(&c, k,
			     "http_server_config: not supported by bagstore's /metrics (HTTP/1.1, no extra headers)");
			goto done;
		} else {
			werr(&c, k, "unknown key \"%s\" (tls_server_config, basic_auth_users)", key ? key : "?");
			goto done;
		}
	}
	if (!tls && !w->nusers) {
		werr(&c, root, "sets neither tls_server_config nor basic_auth_users: it would protect nothing");
		goto done;
	}
	if (gnutls_rnd(GNUTLS_RND_KEY, w->hmac_key, sizeof w->hmac_key) < 0) {
		snprintf(err, size, "%s: no random bytes for the password cache", path);
		goto done;
	}
	*out = w;
	w = NULL;
	rc = 0;
done:
	if (parsed)
		yaml_document_delete(&doc);
	fclose(f);
	svc_web_free(w);
	return rc;
}

/* Constant time in the length of a (b as long). */
static bool same(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t k = 0; k < n; k++)
		d |= x[k] ^ y[k];
	return d == 0;
}

/* bcrypt of pass with hash's settings equals hash, in constant time. */
static bool bcrypt_ok(const char *hash, const char *pass)
{
	struct crypt_data *cd = calloc(1, sizeof *cd);
	const char *h;
	bool ok = false;

	if (!cd)
		return false;
	h = crypt_r(pass, hash, cd);
	if (h && h[0] != '*' && strlen(h) == strlen(hash))
		ok = same(h, hash, strlen(hash));
	explicit_bzero(cd, sizeof *cd);
	free(cd);
	return ok;
}

bool svc_web_check(svc_web_t *w, const char *user, const char *pass)
{
	unsigned char mac[32];
	svc_web_user_t *u = NULL;
	bool ok;

	if (!w->nusers)
		return true;
	if (!user || !pass)
		return false;
	for (int k = 0; k < w->nusers; k++)
		if (!strcmp(w->users[k].name, user))
			u = &w->users[k];
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, w->hmac_key, sizeof w->hmac_key, pass, strlen(pass), mac) < 0)
		return false;
	pthread_mutex_lock(&w->mu);
	ok = u && u->have_ok && same(u->ok, mac, sizeof mac);
	pthread_mutex_unlock(&w->mu);
	if (ok)
		return true;
	/* an unknown user costs a bcrypt too (against the first user's hash) */
	ok = bcrypt_ok(u ? u->hash : w->users[0].hash, pass) && u;
	if (ok) {
		pthread_mutex_lock(&w->mu);
		memcpy(u->ok, mac, sizeof mac);
		u->have_ok = true;
		pthread_mutex_unlock(&w->mu);
	}
	explicit_bzero(mac, sizeof mac);
	return ok;
}
