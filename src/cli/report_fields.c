/* pacer report: checking the fields of one record. */
#include "report_fields.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

json_t *report_field(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "a value of unknown type";
}

/* The shared part of every check: presence, then the type predicate. */
static int check_typed(json_t *obj, const char *key, int required, int (*is_type)(const json_t *),
                       const char *expected, char *reason)
{
    json_t *v = report_field(obj, key);
    if (!v) {
        if (!required)
            return 0;
        snprintf(reason, REPORT_REASON_MAX, "missing field \"%s\" (%s)", key, expected);
        return -EINVAL;
    }
    if (is_type(v))
        return 0;
    snprintf(reason, REPORT_REASON_MAX, "field \"%s\" is %s, expected %s", key, type_name(v), expected);
    return -EINVAL;
}

/* jansson's json_is_* are macros; these give check_typed a function each. */
static int is_string(const json_t *v)
{
    return json_is_string(v);
}
static int is_integer(const json_t *v)
{
    return json_is_integer(v);
}
static int is_bool(const json_t *v)
{
    return json_is_boolean(v);
}
static int is_object(const json_t *v)
{
    return json_is_object(v);
}
static int is_array(const json_t *v)
{
    return json_is_array(v);
}
static int is_number(const json_t *v)
{
    return json_is_number(v);
}

int report_check_string(json_t *obj, const char *key, int required, char *reason)
{
    return check_typed(obj, key, required, is_string, "a string", reason);
}

int report_check_integer(json_t *obj, const char *key, int required, char *reason)
{
    return check_typed(obj, key, required, is_integer, "an integer", reason);
}

int report_check_bool(json_t *obj, const char *key, int required, char *reason)
{
    return check_typed(obj, key, required, is_bool, "true or false", reason);
}

int report_check_object(json_t *obj, const char *key, int required, char *reason)
{
    return check_typed(obj, key, required, is_object, "an object", reason);
}

int report_check_array(json_t *obj, const char *key, int required, char *reason)
{
    return check_typed(obj, key, required, is_array, "an array", reason);
}

int report_check_ms(json_t *obj, const char *key, char *reason)
{
    int r = check_typed(obj, key, 0, is_number, "a number of milliseconds", reason);
    if (r < 0)
        return r;
    json_t *v = report_field(obj, key);
    if (v && json_number_value(v) < 0) {
        snprintf(reason, REPORT_REASON_MAX, "field \"%s\" is negative (%g), expected a duration", key,
                 json_number_value(v));
        return -EINVAL;
    }
    return 0;
}

int report_check_enum(json_t *obj, const char *key, int required, const char *const *values, char *reason)
{
    int r = report_check_string(obj, key, required, reason);
    if (r < 0)
        return r;
    json_t *v = report_field(obj, key);
    if (!v)
        return 0;
    const char *s = json_string_value(v);
    for (size_t i = 0; values[i]; i++)
        if (strcmp(s, values[i]) == 0)
            return 0;

    char expected[128] = "";
    for (size_t i = 0; values[i]; i++) {
        size_t len = strlen(expected);
        snprintf(expected + len, sizeof(expected) - len, "%s%s", i ? ", " : "", values[i]);
    }
    snprintf(reason, REPORT_REASON_MAX, "field \"%s\" is \"%.40s%s\", expected one of %s", key, s,
             strlen(s) > 40 ? "..." : "", expected);
    return -EINVAL;
}
