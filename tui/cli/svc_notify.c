/*
 * svc_notify.c - systemd's notify protocol, written out (sd_notify(3)
 * documents it as the stable interface; no libsystemd): each message is
 * one datagram of "NAME=VALUE" lines sent to the AF_UNIX socket named by
 * $NOTIFY_SOCKET, a path, or an abstract name when it starts with '@'.
 * The watchdog interval comes from $WATCHDOG_USEC, for this process when
 * $WATCHDOG_PID is unset or names it.
 */
#include "service.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int svc_notify_open(svc_notify_t *n, char *err, size_t size)
{
	const char *sock = getenv("NOTIFY_SOCKET");
	const char *wd = getenv("WATCHDOG_USEC"), *wpid = getenv("WATCHDOG_PID");
	size_t len;

	memset(n->path, 0, sizeof n->path);
	n->fd = -1;
	n->pathlen = 0;
	n->watchdog_us = 0;
	if (wd && (!wpid || strtol(wpid, NULL, 10) == (long)getpid()))
		n->watchdog_us = strtoull(wd, NULL, 10);
	/* not for the hooks this process starts */
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	if (!sock || !sock[0]) {
		unsetenv("NOTIFY_SOCKET");
		return 0;
	}
	len = strlen(sock);
	if ((sock[0] != '/' && sock[0] != '@') || len >= sizeof n->path) {
		snprintf(err, size, "NOTIFY_SOCKET=%s: expected an absolute path or an @abstract name", sock);
		unsetenv("NOTIFY_SOCKET");
		return -1;
	}
	memcpy(n->path, sock, len);
	if (n->path[0] == '@')
		n->path[0] = '\0'; /* the abstract namespace */
	n->pathlen = len;
	unsetenv("NOTIFY_SOCKET");
	if ((n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
		snprintf(err, size, "NOTIFY_SOCKET: socket: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void svc_notify_send(svc_notify_t *n, const char *msg)
{
	struct sockaddr_un sa;

	if (n->fd < 0)
		return;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, n->path, n->pathlen);
	/* best effort, as sd_notify: systemd may be gone, or not listening */
	(void)sendto(n->fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
	             (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n->pathlen));
}

void svc_notify_close(svc_notify_t *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}
