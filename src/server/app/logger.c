/* pacerd's log (logger.h). */
#include "logger.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const names[] = {"error", "warning", "info", "debug"};
static const int priorities[] = {3, 4, 6, 7}; /* syslog's LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG */

static int current = LOGGER_INFO;

int logger_level_parse(const char *name)
{
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -EINVAL;
}

const char *logger_level_name(enum logger_level level)
{
    return (unsigned)level < sizeof names / sizeof names[0] ? names[level] : "?";
}

void logger_set_level(enum logger_level level)
{
    __atomic_store_n(&current, (int)level, __ATOMIC_RELAXED);
}

bool logger_enabled(enum logger_level level)
{
    return (int)level <= __atomic_load_n(&current, __ATOMIC_RELAXED);
}

/* Whether stderr is the journal's stream: $JOURNAL_STREAM is "DEV:INODE"
 * of the socket systemd gave as stdout and stderr (a child that redirected
 * stderr elsewhere keeps the variable but not the stream). */
static int journal(void)
{
    static int known = -1; /* -1: not looked yet */
    int j = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (j >= 0)
        return j;
    const char *env = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    j = env && sscanf(env, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
        (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
    __atomic_store_n(&known, j, __ATOMIC_RELAXED);
    return j;
}

void logger_printf(enum logger_level level, const char *fmt, ...)
{
    if (!logger_enabled(level))
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* one write per line, so that lines of threads do not mix */
    if (journal())
        fprintf(stderr, "<%d>pacerd: %s\n", priorities[level], msg);
    else
        fprintf(stderr, "pacerd: %s\n", msg);
}
