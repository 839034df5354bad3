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
	bs__buf_puts(&b, "INSERT INTO bagstore_audit (os_user, host, action, target, detail) VALUES (");
	bs__buf_hex(&b, user, strlen(user));
	bs__buf_puts(&b, ",");
	bs__buf_hex(&b, host, strlen(host));
	bs__buf_puts(&b, ",");
	bs__buf_hex(&b, action, strlen(action));
	bs__buf_puts(&b, ",");
	bs__buf_hex(&b, target, strlen(target));
	bs__buf_puts(&b, ",");
	if (detail)
		bs__buf_hex(&b, detail, strlen(detail));
	else
		bs__buf_puts(&b, "NULL");
	bs__buf_puts(&b, ")");
	if ((rc = bs__buf_ok(&b)))
		goto done;
	for (int i = 0; i < st->n; i++) {
		rc = bs__shard_exec(st, i, b.ptr, b.len);
		if (rc != BS_EUNREACHABLE)
			break;
	}
done:
	bs__buf_free(&b);
	return rc;
}
