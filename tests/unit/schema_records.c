/* Records of every schema type from the schema's lists (schema_records.h). */
#include "schema_records.h"

#include "record_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void must(int r, const pacer_field *f)
{
    if (r < 0) {
        fprintf(stderr, "schema_records: the record API refused field \"%s\"\n", f->name);
        abort();
    }
}

/* The n-th value of a '|' list, into out. */
static const char *nth_value(const char *values, unsigned n, char *out, size_t cap)
{
    unsigned count = 1;
    for (const char *v = values; *v; v++)
        count += *v == '|';
    const char *v = values;
    for (unsigned i = 0; i < n % count; i++)
        v += strcspn(v, "|") + 1;
    snprintf(out, cap, "%.*s", (int)strcspn(v, "|"), v);
    return out;
}

void schema_fill(pacer_record *r, unsigned variant, unsigned skip, bool required_only)
{
    static const char *const strings[] = {"ShopHomeWindow", "naïve ✓ ü", "", "x\"y\\z\n\t"};
    static const char *const urls[] = {"https://user@api.example:8443/api/items/12?x=1", "http://[::1]:80/a/b#f",
                                       "/relative/only", "HTTP://Host.Example/"};
    static const int64_t ints[] = {7, -42, INT64_MAX, 0};
    static const uint64_t ids[] = {7, UINT64_MAX - 5, 0, 123456789};
    /* ns, by variant alone (not by field: only the last set has durations
     * a span's end must start early for): not whole microseconds, under
     * half a microsecond, whole, and past 2^53 microseconds (where the
     * text's number is rounded) */
    static const int64_t ns[] = {12345678, 499, 352750000, INT64_C(9190000000000000123)};
    const pacer_shape *sh = pacer_record_shape(r);
    for (unsigned i = 0; i < sh->n_fields; i++) {
        const pacer_field *f = &sh->fields[i];
        unsigned v = variant + i;
        char buf[128];
        if (i == skip || (required_only && !(f->flags & PACER_FIELD_REQUIRED)))
            continue;
        switch (f->type) {
        case PACER_TYPE_STRING:
            if (f->values)
                must(pacer_record_set_str(r, i, nth_value(f->values, v, buf, sizeof buf)), f);
            else
                must(pacer_record_set_str(r, i, (f->flags & PACER_FIELD_URL) ? urls[v % 4] : strings[v % 4]), f);
            break;
        case PACER_TYPE_INT: must(pacer_record_set_int(r, i, ints[v % 4]), f); break;
        case PACER_TYPE_ID: must(pacer_record_set_id(r, i, ids[v % 4]), f); break;
        case PACER_TYPE_MS: must(pacer_record_set_ms(r, i, ns[variant % 4]), f); break;
        case PACER_TYPE_BOOL: must(pacer_record_set_bool(r, i, v % 2), f); break;
        case PACER_TYPE_OBJECT: {
            pacer_record *o = pacer_record_add(r, i);
            if (!o)
                must(-1, f);
            schema_fill(o, variant + 1, SCHEMA_ALL_FIELDS, required_only);
            break;
        }
        case PACER_TYPE_LIST:
            for (unsigned k = 0; k < 2; k++) {
                pacer_record *e = pacer_record_add(r, i);
                if (!e)
                    must(-1, f);
                schema_fill(e, variant + k, SCHEMA_ALL_FIELDS, required_only);
            }
            break;
        case PACER_TYPE_STRINGS:
            if (v % 4 == 3) {
                must(pacer_record_set_empty(r, i), f);
                break;
            }
            for (unsigned k = 0; k < 3; k++)
                must(pacer_record_add_str(r, i, f->values ? nth_value(f->values, v + k, buf, sizeof buf)
                                                          : strings[(v + k) % 4]), f);
            break;
        }
    }
}

pacer_record *schema_record(pacer_record_id id, unsigned variant, unsigned skip, bool required_only, int64_t ts)
{
    pacer_record *r = pacer_record_new(id);
    if (!r || record_set_common(r, "shop", "1.0", "s1", 42, ts) < 0)
        abort();
    schema_fill(r, variant, skip, required_only);
    return r;
}
