/* The Qt 5 and Qt 6 adapters as the agent sees them (adapter.h): noticed by
 * QtCore, they load the C++ adapter, a library of its own beside the agent
 * (qt_host.h), and hand it the agent's functions.
 *
 * The adapter library is loaded at attach: in the agent's constructor,
 * when QtCore was linked at start (every library mapped then is
 * initialised by that time), or after the outermost dlopen call that
 * loaded QtCore (PyQt's modules): dlopen.c acts neither before the
 * agent's constructor ran nor inside a dlopen made by a library's
 * initialiser, where QtCore or libstdc++ may not be initialised yet.
 *
 * Missing adapter library (a build without Qt's headers, a package not
 * installed): the adapter stays off, said once; the neutral part still
 * measures the program (start-up to its first frame, frames, jank).
 */
#include "agent.h"
#include "adapter.h"
#include "qt_host.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static pacer_qt_ops ops;

static int64_t host_now(void)
{
    return pacer_now_ns();
}

static bool host_main_thread(void)
{
    return agent_on_main_thread();
}

static long host_page_configured(const char *class_name)
{
    pacer_config *cfg = agent_config();
    long i = cfg ? pacer_config_find_page(cfg, class_name) : -1;
    pacer_config_unref(cfg);
    return i;
}

static void host_request_record(const pacer_qt_request *r)
{
    net_info n = {
        .lib = "qt",
        .method = r->method,
        .url = r->url,
        .status = r->status,
        .bytes_sent = r->bytes_sent,
        .bytes_received = r->bytes_received,
        .body_received = r->body_received,
        .content_type = r->content_type,
        .dns_ns = -1,
        .connect_ns = r->connect_ns,
        .tls_ns = -1,
        .first_byte_ns = r->first_byte_ns,
        .total_ns = r->total_ns,
        .error = r->error,
        .end_ns = r->end_ns,
    };
    net_emit(&n);
}

static uint64_t host_net_epoch(void)
{
    return atomic_load(&agent_net_epoch);
}

static void host_note(const char *key, const char *text)
{
    agent_note_once(key, "%s", text);
}

_Static_assert((int)PACER_QT_PHASE_EVENTS == (int)FRAME_EVENTS && (int)PACER_QT_PHASE_UPDATE == (int)FRAME_UPDATE &&
                   (int)PACER_QT_PHASE_LAYOUT == (int)FRAME_LAYOUT && (int)PACER_QT_PHASE_PAINT == (int)FRAME_PAINT &&
                   (int)PACER_QT_PHASE_PRESENT == (int)FRAME_PRESENT && (int)PACER_QT_N_PHASES == (int)FRAME_N_PHASES,
               "the adapter's phases are the records'");

static void *host_frames_open(const char *window, uint64_t instance, int64_t since)
{
    frame_stats *f = frames_new(window, instance, "scene_graph");
    frames_begin_at(f, since);
    return f;
}

static void host_frames_add(void *series, const pacer_qt_frame *f)
{
    frame_info fi = {.start = f->start, .end = f->end, .refresh_ns = f->refresh_ns, .refresh_from = "screen",
                     .has_phases = true};
    for (int i = 0; i < FRAME_N_PHASES; i++)
        fi.phases[i] = f->phases[i];
    agent_in_hook++;
    frames_add_info(series, &fi);
    agent_in_hook--;
}

static int64_t host_frames_since(void *series)
{
    return frames_since(series);
}

static void host_frames_flush(void *series)
{
    agent_in_hook++;
    frames_emit(series, true);
    agent_in_hook--;
}

static void host_frames_close(void *series)
{
    agent_in_hook++;
    frames_free(series);
    agent_in_hook--;
}

/* The directory the agent was loaded from, with a trailing '/'. */
static bool agent_dir(char *buf, size_t size)
{
    Dl_info info;
    if (!dladdr((void *)agent_dir, &info) || !info.dli_fname)
        return false;
    const char *slash = strrchr(info.dli_fname, '/');
    size_t len = slash ? (size_t)(slash - info.dli_fname) + 1 : 0;
    if (len + 1 > size)
        return false;
    memcpy(buf, info.dli_fname, len);
    buf[len] = '\0';
    return true;
}

static int attach(int major, const char **ret_missing)
{
    static char why[PATH_MAX + 64];
    static const pacer_qt_host host = {
        .version = PACER_QT_HOST_VERSION,
        .size = sizeof(pacer_qt_host),
        .now_ns = host_now,
        .on_main_thread = host_main_thread,
        .submit = agent_submit,
        .page_configured = host_page_configured,
        .request_start = net_request_start,
        .request_end = net_request_end,
        .request_record = host_request_record,
        .net_epoch = host_net_epoch,
        .note = host_note,
        .lib_loaded = agent_lib_loaded,
        .frames_open = host_frames_open,
        .frames_add = host_frames_add,
        .frames_since = host_frames_since,
        .frames_flush = host_frames_flush,
        .frames_close = host_frames_close,
        .loop_wait_end = mainloop_wait_end,
    };
    pacer_qt_host h = host;
    h.major = major;
    static pacer_qt_host host_in_use; /* the adapter keeps the pointer */
    host_in_use = h;

    char path[PATH_MAX];
    if (!agent_dir(path, sizeof(path)) ||
        (size_t)snprintf(path + strlen(path), sizeof(path) - strlen(path), "libpacer-qt%d.so", major) >=
            sizeof(path) - strlen(path)) {
        *ret_missing = "its adapter library (the agent's own path is not known)";
        return -ENOENT;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, sizeof(why), "its adapter library (%s)", dlerror());
        *ret_missing = why;
        return -ENOENT;
    }
    pacer_qt_adapter_init_fn init = (pacer_qt_adapter_init_fn)dlsym(lib, PACER_QT_ADAPTER_INIT);
    (void)dlerror();
    if (!init) {
        snprintf(why, sizeof(why), "%s in %s", PACER_QT_ADAPTER_INIT, path);
        *ret_missing = why;
        return -ENOENT;
    }
    const char *reason = NULL;
    int rc = init(&host_in_use, &ops, &reason);
    if (rc < 0) {
        *ret_missing = reason ? reason : "what its adapter needs";
        return rc;
    }
    return 0;
}

static int attach6(const char **ret_missing)
{
    return attach(6, ret_missing);
}

static int attach5(const char **ret_missing)
{
    return attach(5, ret_missing);
}

static void install(void)
{
}

static void stop(void)
{
    if (ops.stop)
        ops.stop();
}

static void flush(void)
{
    if (ops.flush)
        ops.flush();
}

static bool frames_timed(int kind, uint64_t handle)
{
    return ops.frames_timed && ops.frames_timed(kind, handle);
}

static const char *visible_page(void)
{
    return ops.visible_page ? ops.visible_page() : NULL;
}

static void frame_queued(int kind, uint64_t handle)
{
    if (ops.frame_queued)
        ops.frame_queued(kind, handle);
}

static void frame_presented(int kind, uint64_t handle, int64_t t)
{
    if (ops.frame_presented)
        ops.frame_presented(kind, handle, t);
}

const agent_adapter agent_adapter_qt6 = {
    .name = "qt6",
    .title = "Qt 6",
    .soname = "libQt6Core.so.6",
    .measures = ADAPTER_PAGES | ADAPTER_REQUESTS | ADAPTER_NEEDS_DISPLAY,
    .attach = attach6,
    .install = install,
    .stop = stop,
    .flush = flush,
    .visible_page = visible_page,
    .frame_queued = frame_queued,
    .frame_presented = frame_presented,
    .frames_timed = frames_timed,
};

const agent_adapter agent_adapter_qt5 = {
    .name = "qt5",
    .title = "Qt 5",
    .soname = "libQt5Core.so.5",
    .measures = ADAPTER_PAGES | ADAPTER_REQUESTS | ADAPTER_NEEDS_DISPLAY,
    .attach = attach5,
    .install = install,
    .stop = stop,
    .flush = flush,
    .visible_page = visible_page,
    .frame_queued = frame_queued,
    .frame_presented = frame_presented,
    .frames_timed = frames_timed,
};
