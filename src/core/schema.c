/* The schema's tables (include/pacer/schema.h holds the lists). */
#include <pacer/schema.h>

#include <string.h>

#define SHAPE_NONE NULL
#define T(type) PACER_TYPE_##type

#define ROW(ID, name, type, flags, unit, values, semconv, column, shape, meaning) \
    {name, T(type), flags, unit, values, semconv, column, SHAPE_##shape, meaning},

/* Nested shapes first: fields point at them. */
#define SHAPE(NAME, name, LIST)                                 \
    static const pacer_field fields_##NAME[] = {LIST(ROW)};     \
    static const pacer_shape shape_##NAME = {name, fields_##NAME, sizeof(fields_##NAME) / sizeof(pacer_field)};
#define SHAPE_EMPTY(NAME, name) static const pacer_shape shape_##NAME = {name, NULL, 0};

#define SHAPE_PAGE_API (&shape_PAGE_API)
#define SHAPE_STARTUP_PHASES (&shape_STARTUP_PHASES)
#define SHAPE_STACK_FRAME (&shape_STACK_FRAME)
#define SHAPE_FRAME_LEVELS (&shape_FRAME_LEVELS)
#define SHAPE_FRAME_PHASES (&shape_FRAME_PHASES)
#define SHAPE_FROZEN_FRAME (&shape_FROZEN_FRAME)
#define SHAPE_SLOW_WIDGET (&shape_SLOW_WIDGET)
#define SHAPE_LEAK_TYPE (&shape_LEAK_TYPE)
#define SHAPE_LEAK_OBJECT (&shape_LEAK_OBJECT)
#define SHAPE_LEAK_REF (&shape_LEAK_REF)

SHAPE(PAGE_API, "page_api", PACER_PAGE_API_FIELDS)
SHAPE(STARTUP_PHASES, "startup_phases", PACER_STARTUP_PHASES_FIELDS)
SHAPE(STACK_FRAME, "stack_frame", PACER_STACK_FRAME_FIELDS)
SHAPE(FRAME_LEVELS, "frame_levels", PACER_FRAME_LEVELS_FIELDS)
SHAPE(FRAME_PHASES, "frame_phases", PACER_FRAME_PHASES_FIELDS)
SHAPE(FROZEN_FRAME, "frozen_frame", PACER_FROZEN_FRAME_FIELDS)
SHAPE(SLOW_WIDGET, "slow_widget", PACER_SLOW_WIDGET_FIELDS)
SHAPE(LEAK_TYPE, "leak_type", PACER_LEAK_TYPE_FIELDS)
SHAPE(LEAK_REF, "leak_ref", PACER_LEAK_REF_FIELDS)
SHAPE(LEAK_OBJECT, "leak_object", PACER_LEAK_OBJECT_FIELDS)

SHAPE(COMMON, "common", PACER_COMMON_FIELDS)
SHAPE(PAGE, "page", PACER_PAGE_FIELDS)
SHAPE(STARTUP, "startup", PACER_STARTUP_FIELDS)
SHAPE(NET, "net", PACER_NET_FIELDS)
SHAPE(JANK, "jank", PACER_JANK_FIELDS)
SHAPE(FRAMES, "frames", PACER_FRAMES_FIELDS)
SHAPE(LEAK, "leak", PACER_LEAK_FIELDS)

#define TYPE_ROW(ID, name, signal, table, prefix, SHAPE_ID, meaning) \
    {PACER_RECORD_##ID, name, PACER_SIGNAL_##signal, table, prefix, &shape_##SHAPE_ID, meaning},

static const pacer_record_type types[PACER_N_RECORD_TYPES] = {PACER_RECORD_TYPES(TYPE_ROW)};

PACER_API const pacer_shape *pacer_common_shape(void)
{
    return &shape_COMMON;
}

PACER_API const pacer_record_type *pacer_record_type_get(pacer_record_id id)
{
    return (unsigned)id < PACER_N_RECORD_TYPES ? &types[id] : NULL;
}

PACER_API const pacer_record_type *pacer_record_type_find(const char *name, size_t n)
{
    for (size_t i = 0; i < PACER_N_RECORD_TYPES; i++)
        if (strlen(types[i].name) == n && memcmp(types[i].name, name, n) == 0)
            return &types[i];
    return NULL;
}

PACER_API long pacer_shape_find(const pacer_shape *shape, const char *name, size_t n)
{
    for (size_t i = 0; i < shape->n_fields; i++)
        if (strlen(shape->fields[i].name) == n && memcmp(shape->fields[i].name, name, n) == 0)
            return (long)i;
    return -1;
}

PACER_API bool pacer_field_allows(const pacer_field *f, const char *s, size_t n)
{
    if (!f->values)
        return true;
    for (const char *v = f->values; *v;) {
        size_t k = strcspn(v, "|");
        if (k == n && memcmp(v, s, n) == 0)
            return true;
        v += k + (v[k] == '|');
    }
    return false;
}

PACER_API const char *pacer_type_name(pacer_type t)
{
    switch (t) {
    case PACER_TYPE_STRING: return "string";
    case PACER_TYPE_INT:
    case PACER_TYPE_ID: return "integer";
    case PACER_TYPE_MS: return "number";
    case PACER_TYPE_BOOL: return "bool";
    case PACER_TYPE_OBJECT: return "object";
    case PACER_TYPE_LIST: return "array";
    case PACER_TYPE_STRINGS: return "array of strings";
    }
    return "?";
}
