/* wl-app: a Wayland client on libwayland-client alone (xdg-shell, wl_shm
 * buffers), with no toolkit, that the agent tests run under `pacer run` on
 * a headless weston (test_toolkit_free.py): the Wayland twin of sdl-app.c,
 * whose SDL 2.26 cannot run on a compositor without a seat (SDL's Wayland
 * video crashes when no wl_seat is announced; fixed in SDL 2.30), which a
 * headless weston is. It contains no pacer code.
 *
 *   wl-app [--run-ms N] [--stall-at-ms S] [--stall-ms M]
 *
 * It shows a 320x240 top-level (app id "wl-app") and commits a new frame
 * per event-loop iteration in which the compositor asked for one (the
 * previous commit's frame callback came): the loop waits for the
 * compositor's events in poll() up to 16 ms (the prepare_read /
 * read_events way), then draws into a free shm buffer and commits it. It runs N ms from its first frame
 * (default 3000); S ms after it (default 1000) one iteration spends M ms
 * (default 900; 0: none) busy in wl_app_stall() before it draws. Prints
 * "stalled ms=D" and "frames=F", its own figures, and, for the first
 * output it was told of, "output refresh_mhz=R listener=own|other": the
 * current mode's refresh, and whether wl_proxy_get_listener answers the
 * listener the app added (toolkits tell their proxies so).
 */
#include "xdg-shell-client-protocol.h"

#include <wayland-client.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define W 320
#define H 240
#define STRIDE (W * 4)
#define N_BUFFERS 3

static struct wl_compositor *compositor;
static struct wl_shm *shm;
static struct xdg_wm_base *wm_base;
static struct wl_output *output;
static int32_t output_refresh_mhz;

static void on_geometry(void *data, struct wl_output *o, int32_t x, int32_t y, int32_t pw, int32_t ph,
                        int32_t subpixel, const char *make, const char *model, int32_t transform)
{
}

static void on_mode(void *data, struct wl_output *o, uint32_t flags, int32_t width, int32_t height, int32_t refresh)
{
    if (flags & WL_OUTPUT_MODE_CURRENT)
        output_refresh_mhz = refresh;
}

static void on_done(void *data, struct wl_output *o)
{
}

static void on_scale(void *data, struct wl_output *o, int32_t factor)
{
}

static const struct wl_output_listener output_listener = {
    .geometry = on_geometry, .mode = on_mode, .done = on_done, .scale = on_scale};
static int configured;
static int frame_due = 1; /* the last commit's frame callback came */

typedef struct buffer {
    struct wl_buffer *wl;
    uint32_t *pixels;
    int busy;
} buffer;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Busy for ms on the main thread (a computation, not a sleep). */
static __attribute__((noinline)) double wl_app_stall(unsigned ms)
{
    double until = now_ms() + ms;
    volatile double x = 0;
    while (now_ms() < until)
        x += 1.0;
    return x;
}

static void on_global(void *data, struct wl_registry *reg, uint32_t name, const char *iface, uint32_t version)
{
    if (strcmp(iface, wl_compositor_interface.name) == 0)
        compositor = wl_registry_bind(reg, name, &wl_compositor_interface, 1);
    else if (strcmp(iface, wl_shm_interface.name) == 0)
        shm = wl_registry_bind(reg, name, &wl_shm_interface, 1);
    else if (strcmp(iface, xdg_wm_base_interface.name) == 0)
        wm_base = wl_registry_bind(reg, name, &xdg_wm_base_interface, 1);
    else if (strcmp(iface, wl_output_interface.name) == 0 && !output && version >= 2) {
        output = wl_registry_bind(reg, name, &wl_output_interface, 2);
        wl_output_add_listener(output, &output_listener, NULL);
    }
}

static void on_global_remove(void *data, struct wl_registry *reg, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {on_global, on_global_remove};

static void on_ping(void *data, struct xdg_wm_base *base, uint32_t serial)
{
    xdg_wm_base_pong(base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = {on_ping};

static void on_surface_configure(void *data, struct xdg_surface *surface, uint32_t serial)
{
    xdg_surface_ack_configure(surface, serial);
    configured = 1;
}

static const struct xdg_surface_listener surface_listener = {on_surface_configure};

static void on_toplevel_configure(void *data, struct xdg_toplevel *t, int32_t w, int32_t h, struct wl_array *states)
{
}

static void on_toplevel_close(void *data, struct xdg_toplevel *t)
{
}

static const struct xdg_toplevel_listener toplevel_listener = {.configure = on_toplevel_configure,
                                                                .close = on_toplevel_close};

static void on_release(void *data, struct wl_buffer *wl)
{
    ((buffer *)data)->busy = 0;
}

static const struct wl_buffer_listener buffer_listener = {on_release};

static void on_frame_done(void *data, struct wl_callback *cb, uint32_t time)
{
    wl_callback_destroy(cb);
    frame_due = 1;
}

static const struct wl_callback_listener frame_listener = {on_frame_done};

static int make_buffers(buffer *bufs)
{
    size_t size = (size_t)STRIDE * H * N_BUFFERS;
    int fd = memfd_create("wl-app", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
        return -1;
    uint32_t *data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED)
        return -1;
    struct wl_shm_pool *pool = wl_shm_create_pool(shm, fd, (int32_t)size);
    for (int i = 0; i < N_BUFFERS; i++) {
        bufs[i].wl = wl_shm_pool_create_buffer(pool, i * STRIDE * H, W, H, STRIDE, WL_SHM_FORMAT_XRGB8888);
        bufs[i].pixels = data + (size_t)i * W * H;
        wl_buffer_add_listener(bufs[i].wl, &buffer_listener, &bufs[i]);
    }
    wl_shm_pool_destroy(pool);
    close(fd);
    return 0;
}

/* Waits up to ms for the compositor's events and dispatches them. */
static int wait_events(struct wl_display *d, int ms)
{
    while (wl_display_prepare_read(d) != 0)
        wl_display_dispatch_pending(d);
    wl_display_flush(d);
    struct pollfd p = {wl_display_get_fd(d), POLLIN, 0};
    int n = poll(&p, 1, ms);
    if (n > 0)
        wl_display_read_events(d);
    else
        wl_display_cancel_read(d);
    return wl_display_dispatch_pending(d);
}

int main(int argc, char **argv)
{
    unsigned run_ms = 3000, stall_at_ms = 1000, stall_ms = 900;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--run-ms") == 0 && i + 1 < argc)
            run_ms = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--stall-at-ms") == 0 && i + 1 < argc)
            stall_at_ms = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--stall-ms") == 0 && i + 1 < argc)
            stall_ms = (unsigned)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: wl-app [--run-ms N] [--stall-at-ms S] [--stall-ms M]\n");
            return 2;
        }
    }
    struct wl_display *d = wl_display_connect(NULL);
    if (!d) {
        fprintf(stderr, "wl-app: cannot connect to the Wayland display\n");
        return 1;
    }
    struct wl_registry *reg = wl_display_get_registry(d);
    wl_registry_add_listener(reg, &registry_listener, NULL);
    wl_display_roundtrip(d);
    if (!compositor || !shm || !wm_base) {
        fprintf(stderr, "wl-app: the compositor lacks wl_compositor, wl_shm or xdg_wm_base\n");
        return 1;
    }
    xdg_wm_base_add_listener(wm_base, &wm_base_listener, NULL);
    struct wl_surface *surface = wl_compositor_create_surface(compositor);
    struct xdg_surface *xs = xdg_wm_base_get_xdg_surface(wm_base, surface);
    xdg_surface_add_listener(xs, &surface_listener, NULL);
    struct xdg_toplevel *top = xdg_surface_get_toplevel(xs);
    xdg_toplevel_add_listener(top, &toplevel_listener, NULL);
    xdg_toplevel_set_app_id(top, "wl-app");
    xdg_toplevel_set_title(top, "wl-app");
    wl_surface_commit(surface);
    while (!configured && wl_display_dispatch(d) != -1)
        ;
    buffer bufs[N_BUFFERS] = {0};
    if (make_buffers(bufs) < 0) {
        fprintf(stderr, "wl-app: no shm buffers: %s\n", strerror(errno));
        return 1;
    }

    double first = 0, stalled = -1;
    unsigned frames = 0;
    for (;;) {
        if (first && wait_events(d, 16) < 0)
            break;
        double t = now_ms();
        if (first && stall_ms && stalled < 0 && t - first >= stall_at_ms) {
            double t0 = now_ms();
            wl_app_stall(stall_ms);
            stalled = now_ms() - t0;
        }
        buffer *b = NULL;
        for (int i = 0; i < N_BUFFERS && !b && frame_due; i++)
            if (!bufs[i].busy)
                b = &bufs[i];
        if (b) {
            uint32_t colour = 0xff000000u | (frames * 7 % 256) << 16 | (frames * 3 % 256) << 8 | 0x80;
            for (int i = 0; i < W * H; i++)
                b->pixels[i] = colour;
            wl_surface_attach(surface, b->wl, 0, 0);
            wl_surface_damage(surface, 0, 0, W, H);
            wl_callback_add_listener(wl_surface_frame(surface), &frame_listener, NULL);
            frame_due = 0;
            wl_surface_commit(surface);
            b->busy = 1;
            frames++;
            if (!first)
                first = now_ms();
        }
        if (first && now_ms() - first >= run_ms)
            break;
    }
    printf("stalled ms=%.6f\nframes=%u\n", stalled, frames);
    if (output)
        printf("output refresh_mhz=%d listener=%s\n", output_refresh_mhz,
               wl_proxy_get_listener((struct wl_proxy *)output) == (const void *)&output_listener ? "own" : "other");
    xdg_toplevel_destroy(top);
    xdg_surface_destroy(xs);
    wl_surface_destroy(surface);
    wl_display_roundtrip(d);
    wl_display_disconnect(d);
    return 0;
}
