/* pacerd's log: one line per message on stderr, "pacerd: MESSAGE", each
 * message with a level; those less grave than the level set
 * (--log-level, applied again at SIGHUP) are not written. Under systemd
 * (stderr is the journal's stream: $JOURNAL_STREAM names it) each line
 * starts with its syslog priority, "<3>" … "<7>", which the journal keeps
 * as the entry's priority (journalctl -p). Thread-safe. */
#ifndef PACER_SERVER_LOGGER_H
#define PACER_SERVER_LOGGER_H

#include <stdbool.h>

enum logger_level {
    LOGGER_ERROR,   /* pacerd cannot do what it should: refused to start, a reload refused, data not stored */
    LOGGER_WARNING, /* it does less than asked: a setting that waits for a restart, no dashboard */
    LOGGER_INFO,    /* start, reloads, stop */
    LOGGER_DEBUG,   /* each setting a reload applies */
};

/* "error", "warning", "info" or "debug": the level, or -EINVAL. */
int logger_level_parse(const char *name);
const char *logger_level_name(enum logger_level level);

void logger_set_level(enum logger_level level);
bool logger_enabled(enum logger_level level);

/* Writes the message when its level is enabled. */
void logger_printf(enum logger_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
