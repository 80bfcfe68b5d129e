/* The measurement model: turns events into records (see model.c). Not
 * thread-safe: pacer.c serialises every call under the instance lock. */
#ifndef PACER_CORE_MODEL_H
#define PACER_CORE_MODEL_H

#include <pacer/config.h>
#include <pacer/event.h>
#include <pacer/record.h>

#include <stddef.h>
#include <stdint.h>

typedef struct model model;

/* Receives each finished record, with its common fields set, and takes
 * ownership of it. */
typedef void (*model_record_fn)(pacer_record *rec, void *user_data);

typedef struct model_info {
    const char *app;
    const char *version;
    const char *session;
    int64_t pid;
    int64_t wall_offset_ns; /* unix ns = monotonic ns + wall_offset_ns */
} model_info;

/* Takes its own reference to cfg (NULL = empty config). NULL on ENOMEM. */
model *model_new(const model_info *info, pacer_config *cfg, model_record_fn fn, void *user_data);
void model_free(model *m);

/* Swaps the config; pages already measuring keep their own snapshot. */
void model_set_config(model *m, pacer_config *cfg);
/* The config in force (borrowed: valid until the next model_set_config). */
pacer_config *model_get_config(model *m);

/* Feeds one event (t_ns already resolved). An event older than the latest
 * time seen counts as happening at that time (time never goes backwards).
 * Returns 0 or -EINVAL when a required field is missing. Also advances the
 * model's clock, reporting pages whose deadline passed. */
int model_submit(model *m, const pacer_event *ev);

/* Advances the clock without an event (live deadlines). */
void model_tick(model *m, int64_t now_ns);
/* When the earliest deadline of a measuring page falls (model clock ns;
 * INT64_MAX: none). It may be earlier than the real one (a page that
 * finished since), never later. */
int64_t model_next_deadline(const model *m);

/* End of data: every page still measuring is reported as deadline_exceeded
 * (deadline passed by the latest time seen) or incomplete; the cold start
 * record is written if still due. */
void model_finish(model *m);

/* Emits a custom record with the common fields; `fields_json` are object
 * members or NULL. `t_ns` gives its ts. Returns 0 or -EINVAL / -ENOMEM. */
int model_emit(model *m, const char *type, const char *fields_json, int64_t t_ns);

/* Stamps a record built elsewhere (pacer_submit_record) with the common
 * fields and ts = t_ns (monotonic) and delivers it; takes ownership.
 * Returns 0 or -ENOMEM (the record is dropped). */
int model_submit_record(model *m, pacer_record *r, int64_t t_ns);

/* Records produced so far. */
uint64_t model_record_count(const model *m);

#endif
