/* Wayland frames (display.h): the requests a client marshals through
 * libwayland-client. Every request of every protocol goes through one of
 * its marshalling entry points, called by the inline request functions
 * the protocol headers generate (in the app, its toolkit, the GL driver):
 * wl_proxy_marshal_flags and wl_proxy_marshal_array_flags (libwayland
 * 1.20 on), and the older wl_proxy_marshal[_array][_constructor
 * [_versioned]]. The agent exports them all, looks at the few requests
 * below, and calls the real one with the same arguments.
 *
 *   xdg_wm_base.get_xdg_surface     xdg_surface → its wl_surface
 *   xdg_surface.get_toplevel        the wl_surface is a top-level
 *   xdg_toplevel.set_app_id         its name in frames records
 *   xdg_toplevel.destroy            no longer a top-level (its frames
 *                                   are written)
 *   wl_surface.attach               a buffer is pending (or none)
 *   wl_surface.commit               with a buffer pending: a frame
 *   wl_surface.destroy              forgotten
 * (zxdg_shell_v6 and wl_shell's shell surfaces likewise.)
 *
 * A GL driver commits through a proxy wrapper of the app's wl_surface
 * (wl_proxy_create_wrapper, also hooked): wrappers map to the proxy they
 * wrap. A commit reaches the compositor when the connection is flushed:
 * wl_display_flush hands the frames over (display_handover; the dispatch
 * and round-trip calls that flush first are loop_wait.c's).
 *
 * The variadic entry points are forwarded as they are called by the
 * protocol code: every Wayland argument travels in an integer register or
 * stack slot (int32, uint32, fixed, fd, pointers), so the hook reads up to
 * MAX_ARGS slots and passes them on; the real function reads as many as
 * the request's signature has. Exact on the LP64 ABIs pacer supports
 * (x86-64, aarch64), as curl.c's curl_easy_setopt.
 *
 * A destructor request frees its proxy inside the real call: what the hook
 * needs of it is read before.
 *
 * Outputs' refresh: the compositor tells each wl_output's modes to the
 * listener the client adds (wl_proxy_add_listener, hooked). For a wl_output
 * the agent passes a copy of the client's listener whose `mode` entry
 * notes the current mode's refresh (display_output_refresh), then calls the
 * client's; wl_proxy_get_listener (hooked) still answers the client's own
 * listener, which toolkits compare to tell their proxies (Qt's generated
 * fromObject). wl_output.release forgets the output.
 */
#include "display.h"

#include <pacer/base/clock.h>

#include <wayland-client-core.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#define LIBWAYLAND "libwayland-client.so.0"
#define MAX_ARGS 12
#define MAP_SLOTS 1024 /* a power of two */

_Static_assert(sizeof(long) == sizeof(void *) && sizeof(union wl_argument) == sizeof(long),
               "the Wayland hooks assume an LP64 ABI");

/* ---- proxies the agent follows: proxy → (what it is, its wl_surface) ---- */

enum { P_FREE = 0, P_SURFACE, P_SHELL_SURFACE, P_TOPLEVEL, P_WRAPPER, P_GONE };

typedef struct entry {
    const void *key;
    const void *surface; /* the wl_surface it stands for (a wrapper: the proxy it wraps) */
    int what;
    bool pending; /* P_SURFACE: a buffer attached since the last commit */
} entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry map[MAP_SLOTS];
static size_t map_n;

static size_t slot_of(const void *key)
{
    uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 40) & (MAP_SLOTS - 1);
}

/* Lock held. */
static entry *map_find(const void *key)
{
    for (size_t i = slot_of(key), k = 0; k < MAP_SLOTS && map[i].what != P_FREE; i = (i + 1) & (MAP_SLOTS - 1), k++)
        if (map[i].key == key && map[i].what != P_GONE)
            return &map[i];
    return NULL;
}

/* Lock held: the tombstones of removed entries are dropped, the live ones
 * put again. */
static void map_compact(void)
{
    static entry live[MAP_SLOTS];
    size_t n = 0;
    for (size_t i = 0; i < MAP_SLOTS; i++)
        if (map[i].what != P_FREE && map[i].what != P_GONE)
            live[n++] = map[i];
    memset(map, 0, sizeof(map));
    map_n = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = slot_of(live[k].key);
        while (map[i].what != P_FREE)
            i = (i + 1) & (MAP_SLOTS - 1);
        map[i] = live[k];
        map_n++;
    }
}

/* Lock held. NULL when full (the client has hundreds of live surfaces). */
static entry *map_put(const void *key, int what, const void *surface)
{
    entry *e = map_find(key);
    if (!e) {
        if (map_n >= MAP_SLOTS * 3 / 4)
            map_compact();
        if (map_n >= MAP_SLOTS * 3 / 4) {
            agent_note_once("wayland-map", "too many Wayland surfaces; the frames of more are not counted");
            return NULL;
        }
        size_t i = slot_of(key);
        while (map[i].what != P_FREE && map[i].what != P_GONE)
            i = (i + 1) & (MAP_SLOTS - 1);
        e = &map[i];
        if (e->what == P_FREE)
            map_n++;
    }
    *e = (entry){.key = key, .surface = surface, .what = what};
    return e;
}

/* Lock held. Removed entries stay as tombstones (probes pass them). */
static void map_del(const void *key)
{
    entry *e = map_find(key);
    if (e)
        e->what = P_GONE;
}

/* Lock held: the proxy a wrapper wraps, or the proxy itself. */
static const void *unwrap(const void *proxy)
{
    entry *e = map_find(proxy);
    return e && e->what == P_WRAPPER ? e->surface : proxy;
}

/* ---- the requests ---- */

static const char *(*get_class)(struct wl_proxy *);

enum {
    R_NONE,
    R_GET_XDG_SURFACE, /* the created proxy → args[1] */
    R_GET_TOPLEVEL,    /* the created proxy: a toplevel of this shell surface's wl_surface */
    R_SET_APP_ID,
    R_TOPLEVEL_GONE,
    R_ATTACH,
    R_COMMIT,
    R_SURFACE_GONE,
    R_SHELL_GONE,
    R_SET_TOPLEVEL, /* wl_shell_surface */
    R_OUTPUT_GONE,  /* wl_output.release */
};

typedef struct request {
    int kind;
    const void *proxy;
    const void *arg; /* a pointer argument, per kind */
} request;

static bool is(const char *cls, const char *name)
{
    return strcmp(cls, name) == 0;
}

/* Before the real call: which request this is. `arg(i)` is its i-th
 * argument as a pointer-sized slot. */
static request classify(struct wl_proxy *proxy, uint32_t opcode, const long *args)
{
    request r = {R_NONE, proxy, NULL};
    if (!get_class)
        *(void **)&get_class = agent_real(LIBWAYLAND, "wl_proxy_get_class");
    const char *cls = get_class && proxy ? get_class(proxy) : NULL;
    if (!cls || (cls[0] != 'w' && cls[0] != 'x' && cls[0] != 'z'))
        return r;
    if (is(cls, "wl_surface")) {
        r.kind = opcode == 1 ? R_ATTACH : opcode == 6 ? R_COMMIT : opcode == 0 ? R_SURFACE_GONE : R_NONE;
        r.arg = (const void *)args[0];
    } else if (is(cls, "xdg_wm_base") || is(cls, "zxdg_shell_v6")) {
        if (opcode == 2) {
            r.kind = R_GET_XDG_SURFACE;
            r.arg = (const void *)args[1];
        }
    } else if (is(cls, "wl_shell")) {
        if (opcode == 0) {
            r.kind = R_GET_XDG_SURFACE;
            r.arg = (const void *)args[1];
        }
    } else if (is(cls, "xdg_surface") || is(cls, "zxdg_surface_v6")) {
        r.kind = opcode == 1 ? R_GET_TOPLEVEL : opcode == 0 ? R_SHELL_GONE : R_NONE;
    } else if (is(cls, "wl_shell_surface")) {
        r.kind = opcode == 3 ? R_SET_TOPLEVEL : R_NONE;
    } else if (is(cls, "wl_output")) {
        r.kind = opcode == 0 ? R_OUTPUT_GONE : R_NONE;
    } else if (is(cls, "xdg_toplevel") || is(cls, "zxdg_toplevel_v6")) {
        r.kind = opcode == 3 ? R_SET_APP_ID : opcode == 0 ? R_TOPLEVEL_GONE : R_NONE;
        r.arg = (const void *)args[0];
    }
    return r;
}

/* After the real call; `created` is the proxy it made, if any. */
static void apply(const request *r, const void *created)
{
    const void *surface = NULL;
    bool frame = false, toplevel = false, gone = false;
    const char *app_id = NULL;
    pthread_mutex_lock(&mu);
    switch (r->kind) {
    case R_GET_XDG_SURFACE:
        if (created && r->arg)
            map_put(created, P_SHELL_SURFACE, unwrap(r->arg));
        break;
    case R_GET_TOPLEVEL:
    case R_SET_TOPLEVEL: {
        entry *e = map_find(r->proxy);
        if (e && e->what == P_SHELL_SURFACE) {
            surface = e->surface;
            toplevel = true;
            if (created)
                map_put(created, P_TOPLEVEL, surface);
        }
        break;
    }
    case R_SET_APP_ID:
    case R_TOPLEVEL_GONE: {
        entry *e = map_find(r->proxy);
        if (e && e->what == P_TOPLEVEL) {
            surface = e->surface;
            if (r->kind == R_SET_APP_ID)
                app_id = r->arg;
            else
                gone = true, map_del(r->proxy);
        }
        break;
    }
    case R_SHELL_GONE:
        map_del(r->proxy);
        break;
    case R_ATTACH:
    case R_COMMIT: {
        surface = unwrap(r->proxy);
        entry *e = map_find(surface);
        if (r->kind == R_ATTACH) {
            if (!e)
                e = map_put(surface, P_SURFACE, surface);
            if (e)
                e->pending = r->arg != NULL;
        } else if (e && e->what == P_SURFACE && e->pending) {
            e->pending = false;
            frame = true;
        }
        break;
    }
    case R_OUTPUT_GONE:
        display_output_refresh(SK_WAYLAND, (uint64_t)(uintptr_t)r->proxy, 0);
        break;
    case R_SURFACE_GONE:
        surface = unwrap(r->proxy);
        map_del(r->proxy);
        map_del(surface);
        gone = true;
        break;
    }
    pthread_mutex_unlock(&mu);
    if (toplevel)
        display_toplevel(SK_WAYLAND, (uint64_t)(uintptr_t)surface);
    if (app_id)
        display_name(SK_WAYLAND, (uint64_t)(uintptr_t)surface, app_id, strlen(app_id));
    if (frame)
        display_frame(SK_WAYLAND, (uint64_t)(uintptr_t)surface, DS_WAYLAND);
    if (gone && surface)
        display_gone(SK_WAYLAND, (uint64_t)(uintptr_t)surface);
}

/* ---- the entry points ---- */

typedef struct wl_proxy *(*marshal_flags_fn)(struct wl_proxy *, uint32_t, const struct wl_interface *, uint32_t,
                                             uint32_t, ...);
typedef struct wl_proxy *(*marshal_array_flags_fn)(struct wl_proxy *, uint32_t, const struct wl_interface *,
                                                   uint32_t, uint32_t, union wl_argument *);
typedef void (*marshal_fn)(struct wl_proxy *, uint32_t, ...);
typedef void (*marshal_array_fn)(struct wl_proxy *, uint32_t, union wl_argument *);
typedef struct wl_proxy *(*marshal_constructor_fn)(struct wl_proxy *, uint32_t, const struct wl_interface *, ...);
typedef struct wl_proxy *(*marshal_constructor_versioned_fn)(struct wl_proxy *, uint32_t,
                                                             const struct wl_interface *, uint32_t, ...);
typedef struct wl_proxy *(*marshal_array_constructor_fn)(struct wl_proxy *, uint32_t, union wl_argument *,
                                                         const struct wl_interface *);
typedef struct wl_proxy *(*marshal_array_constructor_versioned_fn)(struct wl_proxy *, uint32_t, union wl_argument *,
                                                                   const struct wl_interface *, uint32_t);
typedef int (*flush_fn)(struct wl_display *);
typedef void *(*create_wrapper_fn)(void *);
typedef void (*wrapper_destroy_fn)(void *);

static struct {
    marshal_flags_fn flags;
    marshal_array_flags_fn array_flags;
    marshal_fn plain;
    marshal_array_fn array;
    marshal_constructor_fn constructor;
    marshal_constructor_versioned_fn constructor_versioned;
    marshal_array_constructor_fn array_constructor;
    marshal_array_constructor_versioned_fn array_constructor_versioned;
    create_wrapper_fn create_wrapper;
    wrapper_destroy_fn wrapper_destroy;
    flush_fn flush;
} W;

#define READ_ARGS(ap, a)                      \
    for (int i_ = 0; i_ < MAX_ARGS; i_++)     \
        (a)[i_] = va_arg(ap, long)

#define PASS_ARGS(a) a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]

static request classify_array(struct wl_proxy *proxy, uint32_t opcode, const union wl_argument *args)
{
    long a[2] = {args ? (long)(uintptr_t)args[0].o : 0, 0};
    request r = classify(proxy, opcode, a); /* args[1] only for the two-argument requests: */
    if (r.kind == R_GET_XDG_SURFACE)
        r.arg = args ? args[1].o : NULL;
    return r;
}

AGENT_EXPORT struct wl_proxy *wl_proxy_marshal_flags(struct wl_proxy *proxy, uint32_t opcode,
                                                     const struct wl_interface *interface, uint32_t version,
                                                     uint32_t flags, ...)
{
    AGENT_REAL(W.flags, LIBWAYLAND, "wl_proxy_marshal_flags");
    long a[MAX_ARGS];
    va_list ap;
    va_start(ap, flags);
    READ_ARGS(ap, a);
    va_end(ap);
    request r = display_on() && !agent_in_hook ? classify(proxy, opcode, a) : (request){R_NONE, NULL, NULL};
    struct wl_proxy *created = W.flags(proxy, opcode, interface, version, flags, PASS_ARGS(a));
    if (r.kind != R_NONE)
        apply(&r, created);
    return created;
}

AGENT_EXPORT struct wl_proxy *wl_proxy_marshal_array_flags(struct wl_proxy *proxy, uint32_t opcode,
                                                           const struct wl_interface *interface, uint32_t version,
                                                           uint32_t flags, union wl_argument *args)
{
    AGENT_REAL(W.array_flags, LIBWAYLAND, "wl_proxy_marshal_array_flags");
    request r = display_on() && !agent_in_hook ? classify_array(proxy, opcode, args) : (request){R_NONE, NULL, NULL};
    struct wl_proxy *created = W.array_flags(proxy, opcode, interface, version, flags, args);
    if (r.kind != R_NONE)
        apply(&r, created);
    return created;
}

AGENT_EXPORT void wl_proxy_marshal(struct wl_proxy *proxy, uint32_t opcode, ...)
{
    AGENT_REAL(W.plain, LIBWAYLAND, "wl_proxy_marshal");
    long a[MAX_ARGS];
    va_list ap;
    va_start(ap, opcode);
    READ_ARGS(ap, a);
    va_end(ap);
    request r = display_on() && !agent_in_hook ? classify(proxy, opcode, a) : (request){R_NONE, NULL, NULL};
    W.plain(proxy, opcode, PASS_ARGS(a));
    if (r.kind != R_NONE)
        apply(&r, NULL);
}

AGENT_EXPORT void wl_proxy_marshal_array(struct wl_proxy *proxy, uint32_t opcode, union wl_argument *args)
{
    AGENT_REAL(W.array, LIBWAYLAND, "wl_proxy_marshal_array");
    request r = display_on() && !agent_in_hook ? classify_array(proxy, opcode, args) : (request){R_NONE, NULL, NULL};
    W.array(proxy, opcode, args);
    if (r.kind != R_NONE)
        apply(&r, NULL);
}

AGENT_EXPORT struct wl_proxy *wl_proxy_marshal_constructor(struct wl_proxy *proxy, uint32_t opcode,
                                                           const struct wl_interface *interface, ...)
{
    AGENT_REAL(W.constructor, LIBWAYLAND, "wl_proxy_marshal_constructor");
    long a[MAX_ARGS];
    va_list ap;
    va_start(ap, interface);
    READ_ARGS(ap, a);
    va_end(ap);
    request r = display_on() && !agent_in_hook ? classify(proxy, opcode, a) : (request){R_NONE, NULL, NULL};
    struct wl_proxy *created = W.constructor(proxy, opcode, interface, PASS_ARGS(a));
    if (r.kind != R_NONE)
        apply(&r, created);
    return created;
}

AGENT_EXPORT struct wl_proxy *wl_proxy_marshal_constructor_versioned(struct wl_proxy *proxy, uint32_t opcode,
                                                                     const struct wl_interface *interface,
                                                                     uint32_t version, ...)
{
    AGENT_REAL(W.constructor_versioned, LIBWAYLAND, "wl_proxy_marshal_constructor_versioned");
    long a[MAX_ARGS];
    va_list ap;
    va_start(ap, version);
    READ_ARGS(ap, a);
    va_end(ap);
    request r = display_on() && !agent_in_hook ? classify(proxy, opcode, a) : (request){R_NONE, NULL, NULL};
    struct wl_proxy *created = W.constructor_versioned(proxy, opcode, interface, version, PASS_ARGS(a));
    if (r.kind != R_NONE)
        apply(&r, created);
    return created;
}

AGENT_EXPORT struct wl_proxy *wl_proxy_marshal_array_constructor(struct wl_proxy *proxy, uint32_t opcode,
                                                                 union wl_argument *args,
                                                                 const struct wl_interface *interface)
{
    AGENT_REAL(W.array_constructor, LIBWAYLAND, "wl_proxy_marshal_array_constructor");
    request r = display_on() && !agent_in_hook ? classify_array(proxy, opcode, args) : (request){R_NONE, NULL, NULL};
    struct wl_proxy *created = W.array_constructor(proxy, opcode, args, interface);
    if (r.kind != R_NONE)
        apply(&r, created);
    return created;
}

AGENT_EXPORT struct wl_proxy *wl_proxy_marshal_array_constructor_versioned(struct wl_proxy *proxy, uint32_t opcode,
                                                                           union wl_argument *args,
                                                                           const struct wl_interface *interface,
                                                                           uint32_t version)
{
    AGENT_REAL(W.array_constructor_versioned, LIBWAYLAND, "wl_proxy_marshal_array_constructor_versioned");
    request r = display_on() && !agent_in_hook ? classify_array(proxy, opcode, args) : (request){R_NONE, NULL, NULL};
    struct wl_proxy *created = W.array_constructor_versioned(proxy, opcode, args, interface, version);
    if (r.kind != R_NONE)
        apply(&r, created);
    return created;
}

/* The requests queued so far are sent: frames committed reach the
 * compositor. */
AGENT_EXPORT int wl_display_flush(struct wl_display *display)
{
    AGENT_REAL(W.flush, LIBWAYLAND, "wl_display_flush");
    int64_t t = display_handover_time(); /* the requests leave as it starts */
    int r = W.flush(display);
    int e = errno;
    if (display_on())
        display_handover(SK_WAYLAND, t);
    errno = e;
    return r;
}

AGENT_EXPORT void *wl_proxy_create_wrapper(void *proxy)
{
    AGENT_REAL(W.create_wrapper, LIBWAYLAND, "wl_proxy_create_wrapper");
    void *w = W.create_wrapper(proxy);
    if (w && proxy && display_on()) {
        pthread_mutex_lock(&mu);
        map_put(w, P_WRAPPER, unwrap(proxy));
        pthread_mutex_unlock(&mu);
    }
    return w;
}

AGENT_EXPORT void wl_proxy_wrapper_destroy(void *wrapper)
{
    AGENT_REAL(W.wrapper_destroy, LIBWAYLAND, "wl_proxy_wrapper_destroy");
    if (wrapper && display_on()) {
        pthread_mutex_lock(&mu);
        map_del(wrapper);
        pthread_mutex_unlock(&mu);
    }
    W.wrapper_destroy(wrapper);
}

/* ---- the outputs' refresh ---- */

#define MAX_OUTPUTS 16
#define OUTPUT_EVENTS 6 /* geometry, mode (v1); done, scale (v2); name, description (v4) */
#define MODE_CURRENT 0x1 /* WL_OUTPUT_MODE_CURRENT */

typedef void (*listener_fn)(void);
typedef void (*mode_fn)(void *, struct wl_proxy *, uint32_t, int32_t, int32_t, int32_t);
typedef int (*add_listener_fn)(struct wl_proxy *, listener_fn *, void *);
typedef const void *(*get_listener_fn)(struct wl_proxy *);
typedef uint32_t (*get_version_fn)(struct wl_proxy *);

/* One slot per wl_output: the client's listener and the copy passed on. */
static struct {
    struct wl_proxy *proxy;
    listener_fn *client;
    listener_fn copy[OUTPUT_EVENTS];
} outs[MAX_OUTPUTS];

static add_listener_fn real_add_listener;
static get_listener_fn real_get_listener;
static get_version_fn real_get_version;

static void output_mode(void *data, struct wl_proxy *output, uint32_t flags, int32_t width, int32_t height,
                        int32_t refresh_mhz)
{
    mode_fn client = NULL;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < MAX_OUTPUTS; i++)
        if (outs[i].proxy == output && outs[i].client) {
            client = (mode_fn)outs[i].client[1];
            break;
        }
    pthread_mutex_unlock(&mu);
    if ((flags & MODE_CURRENT) && refresh_mhz > 0 && display_on())
        display_output_refresh(SK_WAYLAND, (uint64_t)(uintptr_t)output, (int64_t)(1000000000000.0 / refresh_mhz));
    if (client)
        client(data, output, flags, width, height, refresh_mhz);
}

AGENT_EXPORT int wl_proxy_add_listener(struct wl_proxy *proxy, listener_fn *implementation, void *data)
{
    AGENT_REAL(real_add_listener, LIBWAYLAND, "wl_proxy_add_listener");
    if (!real_add_listener)
        return -1;
    if (!implementation || !proxy || !display_on() || agent_in_hook)
        return real_add_listener(proxy, implementation, data);
    if (!get_class)
        *(void **)&get_class = agent_real(LIBWAYLAND, "wl_proxy_get_class");
    AGENT_REAL(real_get_version, LIBWAYLAND, "wl_proxy_get_version");
    const char *cls = get_class ? get_class(proxy) : NULL;
    if (!cls || !is(cls, "wl_output") || !real_get_version)
        return real_add_listener(proxy, implementation, data);
    /* the events the client's listener has: as many as its version sends */
    uint32_t version = real_get_version(proxy);
    size_t n = version >= 4 ? 6 : version >= 2 ? 4 : 2;
    listener_fn *pass = implementation;
    pthread_mutex_lock(&mu);
    size_t slot = MAX_OUTPUTS;
    for (size_t i = 0; i < MAX_OUTPUTS; i++) {
        if (outs[i].proxy == proxy) {
            slot = i; /* a proxy freed without release, its address reused */
            break;
        }
        if (!outs[i].proxy && slot == MAX_OUTPUTS)
            slot = i;
    }
    if (slot < MAX_OUTPUTS) {
        memset(outs[slot].copy, 0, sizeof(outs[slot].copy));
        memcpy(outs[slot].copy, implementation, n * sizeof(*implementation));
        outs[slot].copy[1] = (listener_fn)output_mode;
        outs[slot].proxy = proxy;
        outs[slot].client = implementation;
        pass = outs[slot].copy;
    }
    pthread_mutex_unlock(&mu);
    return real_add_listener(proxy, pass, data);
}

AGENT_EXPORT const void *wl_proxy_get_listener(struct wl_proxy *proxy)
{
    AGENT_REAL(real_get_listener, LIBWAYLAND, "wl_proxy_get_listener");
    if (!real_get_listener)
        return NULL;
    const void *l = real_get_listener(proxy);
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < MAX_OUTPUTS; i++)
        if (outs[i].proxy == proxy && l == (const void *)outs[i].copy) {
            l = outs[i].client;
            break;
        }
    pthread_mutex_unlock(&mu);
    return l;
}
