/* The read APIs' filters on candidate rows (store_filter.h). */
#include "store_filter.h"
#include "store_attrs.h"

#include <string.h>
#include <strings.h>

bool store_filter_text(const char *hay, const char *needle)
{
    if (!needle || !*needle)
        return true;
    if (!hay)
        return false;
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
}

bool store_filter_row(enum store_table tb, const store_value *cols, const char *text,
                      const store_attr_filter *attrs, size_t n_attrs)
{
    const store_table_desc *d = store_layout_table(tb);
    const char *body = NULL, *any = NULL, *json = NULL;
    for (size_t i = 0; i < d->n_cols; i++) {
        const store_value *v = &cols[i];
        if (v->type != SV_TEXT)
            continue;
        if (d->cols[i].source == SRC_BODY)
            body = v->p;
        else if (d->cols[i].source == SRC_BODY_ANY)
            any = v->p;
        else if (d->cols[i].source == SRC_ATTRIBUTES)
            json = v->p;
    }
    if (text && !store_filter_text(body, text) && !store_filter_text(any, text))
        return false;
    return store_attrs_match(json, json ? strlen(json) : 0, attrs, n_attrs);
}
