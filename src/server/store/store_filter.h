/* The filters of the read APIs' searches that no index covers, checked
 * on each candidate row by both backends: a log record's text and the
 * attribute filters (store.h, "reading rows back"). Any thread. */
#ifndef PACER_SERVER_STORE_FILTER_H
#define PACER_SERVER_STORE_FILTER_H

#include "store.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether hay holds needle, ASCII case ignored (a NULL or empty needle:
 * true; a NULL hay: false). */
bool store_filter_text(const char *hay, const char *needle);

/* Whether a row of table tb (its columns in layout order, texts
 * NUL-terminated) passes: text (NULL: any) in its body or its AnyValue
 * body, and every attribute filter among its attributes. */
bool store_filter_row(enum store_table tb, const store_value *cols, const char *text,
                      const store_attr_filter *attrs, size_t n_attrs);

#endif
