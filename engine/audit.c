/*
 * audit.c - the audit log of operator changes (bagstore_audit), written on
 * the first shard that answers, with the OS user and host of the operator.
 */
#include "internal.h"

#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int bs_audit(bs_store_t *st, const char *action, const char *target, const char *detail)
{
	char host[256] = "unknown", user[64] = "unknown";
	bs_buf_t b = {0};
	int rc = BS_EUNREACHABLE;

	gethostname(host, sizeof host - 1);
	struct passwd *pw = getpwuid(getuid());
	if (pw && pw->pw_name)
		snprintf(user, sizeof user, "%s", pw->pw_name);
	buf_puts(&b, "INSERT INTO bagstore_audit (os_user, host, action, target, detail) VALUES (");
	buf_hex(&b, user, strlen(user));
	buf_puts(&b, ",");
	buf_hex(&b, host, strlen(host));
	buf_puts(&b, ",");
	buf_hex(&b, action, strlen(action));
	buf_puts(&b, ",");
	buf_hex(&b, target, strlen(target));
	buf_puts(&b, ",");
	if (detail)
		buf_hex(&b, detail, strlen(detail));
	else
		buf_puts(&b, "NULL");
	buf_puts(&b, ")");
	if ((rc = buf_ok(&b)))
		goto done;
	for (int i = 0; i < st->n; i++) {
		rc = shard_exec(st, i, b.ptr, b.len);
		if (rc != BS_EUNREACHABLE)
			break;
	}
done:
	buf_free(&b);
	return rc;
}
