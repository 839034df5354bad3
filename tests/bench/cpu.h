/*
 * cpu.h - the benchmarks' reading of a process's CPU time, for printing
 * where a run's CPU went (the shards' servers on this host, the client).
 */
#ifndef BENCH_CPU_H
#define BENCH_CPU_H

#include <mysql.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* CPU seconds of process pid (utime + stime, all its threads, those
 * ended included), from /proc; -1 unknown. */
static inline double cpu_of(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	unsigned long ut = 0, stt = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt) != 2)
		return -1;
	return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds of the n processes pid[] together (those unknown, 0 or
 * unreadable, count nothing). */
static inline double cpu_of_all(const long *pid, int n)
{
	double t = 0;
	for (int i = 0; i < n; i++) {
		double c = pid[i] > 0 ? cpu_of(pid[i]) : -1;
		t += c > 0 ? c : 0;
	}
	return t;
}

/* The pid of the server m is connected to, from its @@pid_file: 0 when
 * it is not known (not on this host, not readable). */
static inline long server_pid_of(MYSQL *m)
{
	long pid = 0;
	if (mysql_query(m, "SELECT @@pid_file"))
		return 0;
	MYSQL_RES *res = mysql_store_result(m);
	MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
	FILE *f = row && row[0] ? fopen(row[0], "r") : NULL;
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	if (res)
		mysql_free_result(res);
	return pid;
}

#endif
