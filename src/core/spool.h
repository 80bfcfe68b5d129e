/* The on-disk spool: records wait in a SQLite database (WAL) until the
 * uploader has delivered them, in the form they are sent in. See spool.c
 * for the schema, the forms and the batch rules. A spool handle is used by
 * one thread at a time; several processes may open the same file. */
#ifndef PACER_CORE_SPOOL_H
#define PACER_CORE_SPOOL_H

#include <pacer/schema.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct spool spool;

/* How a spooled record is kept. */
typedef enum spool_form {
    SPOOL_JSON = 0, /* its JSON line: what earlier versions spooled, still delivered */
    SPOOL_OTLP = 1, /* its run and its OTLP item, in protobuf (otlp_spool_body) */
} spool_form;

/* Opens (creating when needed) the spool at `path`, with a size cap of
 * `max_bytes` of spooled bodies (0 = 64 MiB). Returns 0 or a negative errno,
 * with *ret_error (malloc'd) naming the file and the reason. */
int spool_open(const char *path, int64_t max_bytes, spool **ret, char **ret_error);
void spool_close(spool *s);

/* Appends a record (`len` bytes of `body`, in `form`) to the records
 * waiting as `signal` (its type's, schema.h). When the cap is exceeded the
 * oldest records are deleted and counted. Returns 0 or -EIO. */
int spool_add(spool *s, pacer_signal signal, spool_form form, const void *body, size_t len);

/* A batch: consecutive records of one signal and one form, with a stable
 * id. */
typedef struct spool_batch {
    pacer_signal signal;
    spool_form form;
    int64_t first_id, last_id;
    char id[33];        /* 32 hex digits */
    size_t n;
    char **records;     /* n bodies, each NUL-terminated (an OTLP body may hold NULs) */
    size_t *lens;       /* their lengths */
} spool_batch;

/* Fills *ret with the pending batch of `signal` (the same one again until it
 * is acked or dropped) or a new one of at most `max_records` (and of at
 * most spool_set_batch_bytes' bytes of bodies, unless one record alone is
 * more): JSON lines first, while an earlier version's are left, then OTLP
 * records. Returns 1 when a batch was filled, 0 when the spool holds
 * nothing of that signal, or a negative errno. */
int spool_next_batch(spool *s, pacer_signal signal, size_t max_records, spool_batch *ret);

/* Caps the bodies of the batches this handle chooses from now on (a
 * pending batch is sent as it was chosen); 0: no cap, the default. */
void spool_set_batch_bytes(spool *s, int64_t max_bytes);
void spool_batch_clear(spool_batch *b);

/* The batch was delivered (ack) or refused for good (drop): its records are
 * deleted; dropped ones are counted. */
int spool_ack(spool *s, const spool_batch *b);
int spool_drop(spool *s, const spool_batch *b);

typedef struct spool_stats {
    int64_t records;   /* waiting */
    int64_t bytes;     /* waiting */
    int64_t dropped;   /* deleted unsent: cap exceeded or refused by the server */
    int64_t sent;      /* delivered */
} spool_stats;

int spool_get_stats(spool *s, spool_stats *ret);

/* The default location: $XDG_STATE_HOME/pacer/spool.db, else
 * ~/.local/state/pacer/spool.db. Creates the folder. Returns a malloc'd path
 * or NULL. */
char *spool_default_path(void);

#endif
