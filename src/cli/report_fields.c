/* pacer report: what the sections take from the schema. */
#include "report_fields.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const pacer_shape *report_shape(pacer_record_id type)
{
    return pacer_record_type_get(type)->shape;
}

const char *report_field_name(pacer_record_id type, unsigned field)
{
    return report_shape(type)->fields[field].name;
}

bool report_number(const pacer_record *r, unsigned field, double *ret)
{
    if (!pacer_record_has(r, field))
        return false;
    switch (pacer_record_shape(r)->fields[field].type) {
    case PACER_TYPE_MS:
        *ret = pacer_record_ms(r, field);
        return true;
    case PACER_TYPE_INT:
        *ret = (double)pacer_record_int(r, field);
        return true;
    case PACER_TYPE_ID:
        *ret = (double)pacer_record_u64(r, field);
        return true;
    default:
        return false;
    }
}

int report_values_init(report_values *ret, const pacer_field *f)
{
    *ret = (report_values){0};
    if (!f->values)
        return -EINVAL;
    size_t n = 1;
    for (const char *s = f->values; *s; s++)
        n += *s == '|';
    char *text = strdup(f->values);
    const char **v = calloc(n, sizeof(*v));
    if (!text || !v) {
        free(text);
        free(v);
        return -ENOMEM;
    }
    char *s = text;
    for (size_t i = 0; i < n; i++) {
        v[i] = s;
        s += strcspn(s, "|");
        if (*s)
            *s++ = '\0';
    }
    *ret = (report_values){.text = text, .v = v, .n = n};
    return 0;
}

long report_values_find(const report_values *vals, const char *s)
{
    for (size_t i = 0; s && i < vals->n; i++)
        if (strcmp(vals->v[i], s) == 0)
            return (long)i;
    return -1;
}

void report_values_release(report_values *vals)
{
    free(vals->text);
    free(vals->v);
    *vals = (report_values){0};
}
