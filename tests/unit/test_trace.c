/*
 * test_trace.c - what the statement trace shows of a statement
 * (bs__trace_text, engine/shard.c), with no shard: values over 64 bytes
 * shortened to their first 32 and their size, short ones whole, and a
 * statement that could carry a password masked after its first words.
 * The trace against real shards is tests/integration/test_trace.sh.
 */
#include "internal.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

static char *text(const char *sql)
{
	char *t = bs__trace_text(sql, strlen(sql));
	CHECK(t != NULL, "bs__trace_text(%s) gave NULL", sql);
	return t;
}

static void masked(const char *sql, const char *secret)
{
	char *t = text(sql);
	CHECK(t && !strstr(t, secret), "the password %s shows in \"%s\"", secret, t ? t : "");
	CHECK(t && strstr(t, "<masked"), "\"%s\" is not marked masked", t ? t : "");
	free(t);
}

int main(void)
{
	char sql[1024], hex[401], *t;

	/* short values and the statement stay as they are */
	t = text("SELECT k, v FROM bagstore_meta WHERE k IN ('store_id','shard_name') AND id=X'00ff'");
	CHECK_STR(t, "SELECT k, v FROM bagstore_meta WHERE k IN ('store_id','shard_name') AND id=X'00ff'");
	free(t);

	/* a 200-byte hex value: its first 32 bytes and its size */
	for (int k = 0; k < 400; k++)
		hex[k] = "0123456789abcdef"[k % 16];
	hex[400] = '\0';
	snprintf(sql, sizeof sql, "INSERT INTO t (v) VALUES (_utf8mb4 X'%s'),(1)", hex);
	t = text(sql);
	CHECK(t && strstr(t, "[200 bytes]") && !strstr(t, hex) && strstr(t, "),(1)"),
	      "the long value is not shortened: %s", t ? t : "");
	CHECK(t && strlen(t) < 140, "shortened to %zu bytes: %s", t ? strlen(t) : 0, t ? t : "");
	free(t);
	/* exactly 64 bytes: whole */
	snprintf(sql, sizeof sql, "SELECT X'%.128s'", hex);
	t = text(sql);
	CHECK_STR(t, sql);
	free(t);
	/* a long quoted string, with an escaped quote inside */
	snprintf(sql, sizeof sql, "SELECT 'it''s %s' FROM dual", hex);
	t = text(sql);
	CHECK(t && strstr(t, "bytes]") && strstr(t, "FROM dual") && !strstr(t, hex), "the string: %s", t ? t : "");
	free(t);

	/* statements that could carry a password */
	masked("CREATE USER 'app'@'%' IDENTIFIED BY 'Sekret-1'", "Sekret-1");
	masked("  create user app IDENTIFIED BY 'Sekret-2'", "Sekret-2");
	masked("ALTER USER app IDENTIFIED BY 'Sekret-3'", "Sekret-3");
	masked("GRANT ALL ON bagstore.* TO app IDENTIFIED BY 'Sekret-4'", "Sekret-4");
	masked("SET PASSWORD FOR app = PASSWORD('Sekret-5')", "Sekret-5");
	masked("CHANGE MASTER TO MASTER_HOST='h', MASTER_PASSWORD='Sekret-6'", "Sekret-6");
	masked("SELECT 1; CREATE USER x IDENTIFIED BY 'Sekret-7'", "Sekret-7");
	t = text("CREATE USER 'app'@'%' IDENTIFIED BY 'Sekret-1'");
	CHECK(t && !strncmp(t, "CREATE USER", 11), "masked keeps its first words: %s", t ? t : "");
	free(t);

	/* a long statement is cut, saying its size */
	char *big = malloc(20001);
	memset(big, 'a', 20000);
	memcpy(big, "SELECT ", 7);
	big[20000] = '\0';
	t = text(big);
	CHECK(t && strlen(t) < 4100 && strstr(t, "[20000 bytes in all]"), "the long statement: %zu bytes",
	      t ? strlen(t) : 0);
	free(t);
	free(big);
	return t_done("trace");
}
