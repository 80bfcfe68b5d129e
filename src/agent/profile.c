/* Wall-clock profiles of stuck main-loop iterations (the `jank` record's
 * profile_samples and profile): where a long iteration's time went, not
 * only where it was when the watchdog first looked.
 *
 * Once the iteration running now has been busy for PROFILE_AFTER_MS
 * (default 100; PACER_PROFILE_AFTER_MS overrides it, 0 turns profiles
 * off), the watchdog takes a sample of the main thread's stack every
 * PROFILE_INTERVAL_MS (default 10; PACER_PROFILE_INTERVAL_MS) until the
 * iteration ends, with stack.c's capture (stack_sample), whatever the
 * thread does: asleep in a system call its stack is read from /proc (no
 * signal), running it is a perf sample — the event left enabled while the
 * iteration is profiled, so the sample is ready at the slot — or, without
 * perf, the capture signal, sent only to a thread seen running (never into
 * a blocked call). The slots are fixed
 * (start + k × interval): a slot the watchdog missed (a slow unwind) is
 * skipped, not caught up, so each sample stands for one interval of wall
 * time, running or asleep alike.
 *
 * Samples are unwound on the watchdog thread and kept as distinct stacks
 * with their counts (MAX_STACKS; samples past them count as dropped).
 * When the iteration ends below jank-ms nothing is written and the samples
 * are forgotten; when it becomes a `jank` record (jank.c, watchdog
 * thread), they are symbolized there, off the main thread, and written as
 * folded stacks: one line per distinct stack, outermost frame first,
 * frames joined by ';', then a space and the samples' count ("main;
 * g_main_context_dispatch;on_timeout;usleep 55"), the format flame-graph
 * tools read. A frame is its function's name (cut at '.' or '@', as the
 * fingerprint cuts it), else module+0xoffset, else the address.
 *
 * Memory: the table is allocated at the first profile and kept (some
 * 300 KiB). Watchdog thread only.
 */
#include "agent.h"

#include <pacer/base/clock.h>
#include <pacer/base/hash.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pacer/symbols.h>

#define DEFAULT_AFTER_MS 100
#define DEFAULT_INTERVAL_MS 10
#define MAX_STACKS 512
#define PROFILE_MAX_TEXT (64 * 1024)

pt_symbols *stack_symbols(void); /* stack.c */

typedef struct sampled {
    uint64_t hash;
    uint32_t count;
    uint16_t n;
    uint64_t pc[STACK_MAX_FRAMES];
} sampled;

static struct {
    int64_t start;       /* the iteration profiled, 0: none */
    stack_trace last;    /* its newest sample (last.n 0: none) */
    const char *last_method;
    int64_t next;        /* the next slot */
    uint32_t samples, dropped, n_stacks;
    sampled *stacks;     /* MAX_STACKS */
} prof;

static int64_t after_ns = -1, interval_ns;

static long env_ms(const char *name, long def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long ms = strtol(v, &end, 10);
    return *end || ms < 0 ? def : ms;
}

static void read_settings(void)
{
    if (after_ns >= 0)
        return;
    after_ns = (int64_t)env_ms("PACER_PROFILE_AFTER_MS", DEFAULT_AFTER_MS) * 1000000;
    interval_ns = (int64_t)env_ms("PACER_PROFILE_INTERVAL_MS", DEFAULT_INTERVAL_MS) * 1000000;
    if (interval_ns <= 0)
        interval_ns = (int64_t)DEFAULT_INTERVAL_MS * 1000000;
}

int64_t profile_after_ns(void)
{
    read_settings();
    return after_ns;
}

static void forget(void)
{
    if (prof.start)
        stack_sample_end();
    prof.start = 0;
    prof.samples = prof.dropped = prof.n_stacks = 0;
    prof.last.n = 0;
}

static void keep(const stack_trace *st)
{
    uint64_t h = fnv1a64(FNV1A64_INIT, st->pc, st->n * sizeof(st->pc[0]));
    for (uint32_t i = 0; i < prof.n_stacks; i++) {
        sampled *s = &prof.stacks[i];
        if (s->hash == h && s->n == st->n && memcmp(s->pc, st->pc, st->n * sizeof(st->pc[0])) == 0) {
            s->count++;
            prof.samples++;
            return;
        }
    }
    if (prof.n_stacks == MAX_STACKS) {
        prof.dropped++;
        return;
    }
    sampled *s = &prof.stacks[prof.n_stacks++];
    s->hash = h;
    s->count = 1;
    s->n = (uint16_t)st->n;
    memcpy(s->pc, st->pc, st->n * sizeof(st->pc[0]));
    prof.samples++;
}

int64_t profile_round(int64_t busy_since, int64_t now)
{
    read_settings();
    if (prof.start && prof.start != busy_since)
        forget(); /* ended below jank-ms (the caller drained the long ones first) */
    if (after_ns <= 0 || !busy_since)
        return INT64_MAX;
    if (now - busy_since < after_ns)
        return busy_since + after_ns;
    if (!prof.stacks) {
        prof.stacks = malloc(MAX_STACKS * sizeof(*prof.stacks));
        if (!prof.stacks) {
            agent_note_once("profile", "out of memory; jank records come without profiles");
            after_ns = 0;
            return INT64_MAX;
        }
    }
    if (prof.start != busy_since) {
        forget();
        prof.start = busy_since;
        prof.next = busy_since + after_ns;
    }
    if (now < prof.next)
        return prof.next;
    stack_trace st;
    const char *method;
    st.n = 0;
    /* a running thread's sample may wait up to an interval for its perf
     * sample; past that the slot is gone anyway */
    if (stack_sample(&st, (int)(interval_ns / 1000000), &method) == 0 && st.n > 0) {
        keep(&st);
        prof.last = st;
        prof.last_method = method;
    }
    /* the next slot after now: missed ones are skipped */
    int64_t t = mono_ns();
    prof.next += interval_ns;
    if (prof.next <= t)
        prof.next += ((t - prof.next) / interval_ns + 1) * interval_ns;
    return prof.next;
}

bool profile_last(int64_t start, stack_trace *ret, const char **ret_method)
{
    if (!prof.start || prof.start != start || !prof.last.n)
        return false;
    *ret = prof.last;
    *ret_method = prof.last_method;
    return true;
}

int64_t profile_pending(void)
{
    return prof.start;
}

/* A frame of a folded line: no ';', space or line break in it. */
static size_t frame_name(const pt_sym *s, uint64_t pc, char *out, size_t cap)
{
    int n;
    if (s && s->name && !(s->name[0] == '0' && s->name[1] == 'x') && strcmp(s->name, "?") != 0)
        n = snprintf(out, cap, "%.*s", (int)strcspn(s->name, ".@"), s->name);
    else if (s && s->module)
        n = snprintf(out, cap, "%s+0x%llx", s->module, (unsigned long long)s->offset);
    else
        n = snprintf(out, cap, "0x%llx", (unsigned long long)pc);
    size_t len = n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
    for (size_t i = 0; i < len; i++)
        if (out[i] == ';' || out[i] == ' ' || out[i] == '\n' || out[i] == '\r' || out[i] == '\t')
            out[i] = '_';
    return len;
}

typedef struct line {
    char *text; /* "f;g;h" */
    uint32_t count;
} line;

static int by_text(const void *a, const void *b)
{
    return strcmp(((const line *)a)->text, ((const line *)b)->text);
}

static int by_count(const void *a, const void *b)
{
    uint32_t x = ((const line *)a)->count, y = ((const line *)b)->count;
    return x < y ? 1 : x > y ? -1 : strcmp(((const line *)a)->text, ((const line *)b)->text);
}

void profile_attach(pacer_record *r, int64_t start)
{
    if (!prof.start || prof.start != start || !r) {
        if (prof.start == start)
            forget();
        return;
    }
    pacer_record_set_int(r, PACER_JANK_PROFILE_SAMPLES, (int64_t)prof.samples);
    pacer_record_set_ms(r, PACER_JANK_PROFILE_INTERVAL_MS, interval_ns);
    pt_symbols *symbols = stack_symbols();
    line *lines = calloc(prof.n_stacks ? prof.n_stacks : 1, sizeof(*lines));
    size_t n_lines = 0;
    for (uint32_t i = 0; lines && i < prof.n_stacks; i++) {
        const sampled *s = &prof.stacks[i];
        char buf[STACK_MAX_FRAMES * 96];
        size_t len = 0;
        for (size_t k = s->n; k-- > 0;) { /* outermost first */
            char name[256];
            size_t nl = frame_name(symbols ? pt_symbols_lookup(symbols, s->pc[k]) : NULL, s->pc[k], name, sizeof(name));
            if (len + nl + 2 >= sizeof(buf))
                break;
            if (len)
                buf[len++] = ';';
            memcpy(buf + len, name, nl);
            len += nl;
        }
        buf[len] = '\0';
        lines[n_lines].text = strdup(buf);
        lines[n_lines].count = s->count;
        if (lines[n_lines].text)
            n_lines++;
    }
    /* stacks that name the same functions (other call sites) are one line */
    qsort(lines, n_lines, sizeof(*lines), by_text);
    size_t m = 0;
    for (size_t i = 0; i < n_lines; i++) {
        if (m && strcmp(lines[m - 1].text, lines[i].text) == 0) {
            lines[m - 1].count += lines[i].count;
            free(lines[i].text);
        } else {
            lines[m++] = lines[i];
        }
    }
    qsort(lines, m, sizeof(*lines), by_count);
    char *text = malloc(PROFILE_MAX_TEXT);
    size_t used = 0;
    for (size_t i = 0; text && i < m; i++) {
        int n = snprintf(text + used, PROFILE_MAX_TEXT - used, "%s%s %u", used ? "\n" : "", lines[i].text,
                         lines[i].count);
        if (n < 0 || (size_t)n >= PROFILE_MAX_TEXT - used)
            break; /* the rarest stacks are left out past the cap */
        used += (size_t)n;
    }
    if (text && used)
        pacer_record_set_str(r, PACER_JANK_PROFILE, text);
    free(text);
    for (size_t i = 0; i < m; i++)
        free(lines[i].text);
    free(lines);
    forget();
}
