/* Readiness and state for the service manager: systemd's notification
 * protocol (sd_notify(3)) — a datagram of "NAME=VALUE" lines sent to the
 * AF_UNIX socket $NOTIFY_SOCKET names (a path, or "@NAME" for an abstract
 * socket). pacerd sends READY=1 once it listens, RELOADING=1 then READY=1
 * around a reload, STOPPING=1 when it starts to stop. Without
 * $NOTIFY_SOCKET (not started by systemd as Type=notify) nothing is sent. */
#ifndef PACER_SERVER_NOTIFY_H
#define PACER_SERVER_NOTIFY_H

/* Sends state ("READY=1\nSTATUS=…"): 0 (also when there is no
 * $NOTIFY_SOCKET), or a negative errno. */
int notify_send(const char *state);

/* RELOADING=1 with MONOTONIC_USEC (the reload's start, as systemd asks). */
int notify_reloading(void);

#endif
