/* X11 frames (display.h), for XCB and Xlib programs alike; Xlib encodes
 * its own requests, so each library's calls are hooked, and a frame
 * passes through one of them only.
 *
 *   top-levels   xcb_create_window[_aux][_checked], XCreateWindow and
 *                XCreateSimpleWindow with a parent that is a root window
 *                of the connection's screens (read from the connection's
 *                setup, or with XScreenCount/XRootWindow: no request is
 *                sent); xcb_destroy_window[_checked] and XDestroyWindow
 *                forget them.
 *   frames       Present (xcb_present_pixmap[_checked]: a compositing
 *                driver, DRI3), image uploads (xcb_put_image,
 *                xcb_shm_put_image, XPutImage, XShmPutImage and their
 *                _checked forms) to such a window, and images copied onto
 *                it from elsewhere (xcb_copy_area[_checked], XCopyArea:
 *                Qt's backing store uploads to a pixmap and copies that to
 *                the window), as the call returns.
 *   hand-over    the requests are sent by xcb_flush, XFlush and XSync
 *                (and before any wait: loop_wait.c's xcb_wait_for_event):
 *                a frame reaches the X server then (display_handover).
 *   names        WM_CLASS (atom 67) set with xcb_change_property or
 *                XChangeProperty (XSetClassHint goes through it): its
 *                class names the window's frames records.
 *
 *   refresh      the outputs' refresh, from the RandR replies the
 *                program reads itself (GDK, Qt's xcb plugin and SDL read
 *                them at start): the modes of the screen's resources
 *                (xcb_randr_get_screen_resources[_current]_reply; Xlib's
 *                XRRGetCrtcInfo is given them), then the mode of each
 *                CRTC in use (xcb_randr_get_crtc_info_reply,
 *                XRRGetCrtcInfo): dot clock / (htotal × vtotal). A mode
 *                without timings (Xvfb's: a dot clock of 0) tells none.
 *
 * Every hook calls the real function first and returns its result
 * unchanged; the agent sends the X server nothing.
 */
#include "display.h"

#include <pacer/base/clock.h>

#include <X11/Xlib.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xrandr.h>
#include <xcb/present.h>
#include <xcb/randr.h>
#include <xcb/shm.h>
#include <xcb/xcb.h>

#include <pthread.h>
#include <string.h>

#define LIBXCB "libxcb.so.1"
#define LIBXCB_SHM "libxcb-shm.so.0"
#define LIBXCB_PRESENT "libxcb-present.so.0"
#define LIBX11 "libX11.so.6"
#define LIBXEXT "libXext.so.6"
#define LIBXCB_RANDR "libxcb-randr.so.0"
#define LIBXRANDR "libXrandr.so.2"
#define WM_CLASS_ATOM 67

/* ---- which windows are top-levels ---- */

static struct {
    const xcb_setup_t *(*get_setup)(xcb_connection_t *);
    xcb_screen_iterator_t (*roots)(const xcb_setup_t *);
    void (*next)(xcb_screen_iterator_t *);
    int (*screen_count)(Display *);
    Window (*root_window)(Display *, int);
} F;

static bool xcb_is_root(xcb_connection_t *c, xcb_window_t parent)
{
    AGENT_REAL(F.get_setup, LIBXCB, "xcb_get_setup");
    AGENT_REAL(F.roots, LIBXCB, "xcb_setup_roots_iterator");
    AGENT_REAL(F.next, LIBXCB, "xcb_screen_next");
    const xcb_setup_t *setup = F.get_setup && F.roots && F.next && c ? F.get_setup(c) : NULL;
    if (!setup)
        return false;
    for (xcb_screen_iterator_t it = F.roots(setup); it.rem; F.next(&it))
        if (it.data && it.data->root == parent)
            return true;
    return false;
}

static bool xlib_is_root(Display *d, Window parent)
{
    AGENT_REAL(F.screen_count, LIBX11, "XScreenCount");
    AGENT_REAL(F.root_window, LIBX11, "XRootWindow");
    if (!F.screen_count || !F.root_window || !d)
        return false;
    int n = F.screen_count(d);
    for (int i = 0; i < n; i++)
        if (F.root_window(d, i) == parent)
            return true;
    return false;
}

static void created(bool on_root, uint64_t window)
{
    if (on_root)
        display_toplevel(SK_X11, window);
}

/* WM_CLASS is "instance\0class\0": the class names the window. */
static void wm_class(uint64_t window, const char *data, size_t len)
{
    size_t first = strnlen(data, len);
    if (first + 1 >= len)
        return;
    const char *cls = data + first + 1;
    display_name(SK_X11, window, cls, strnlen(cls, len - first - 1));
}

/* ---- XCB ---- */

typedef xcb_void_cookie_t (*create_window_fn)(xcb_connection_t *, uint8_t, xcb_window_t, xcb_window_t, int16_t,
                                              int16_t, uint16_t, uint16_t, uint16_t, uint16_t, xcb_visualid_t,
                                              uint32_t, const void *);
typedef xcb_void_cookie_t (*create_window_aux_fn)(xcb_connection_t *, uint8_t, xcb_window_t, xcb_window_t, int16_t,
                                                  int16_t, uint16_t, uint16_t, uint16_t, uint16_t, xcb_visualid_t,
                                                  uint32_t, const xcb_create_window_value_list_t *);
typedef xcb_void_cookie_t (*destroy_window_fn)(xcb_connection_t *, xcb_window_t);
typedef xcb_void_cookie_t (*put_image_fn)(xcb_connection_t *, uint8_t, xcb_drawable_t, xcb_gcontext_t, uint16_t,
                                          uint16_t, int16_t, int16_t, uint8_t, uint8_t, uint32_t, const uint8_t *);
typedef xcb_void_cookie_t (*shm_put_image_fn)(xcb_connection_t *, xcb_drawable_t, xcb_gcontext_t, uint16_t, uint16_t,
                                              uint16_t, uint16_t, uint16_t, uint16_t, int16_t, int16_t, uint8_t,
                                              uint8_t, uint8_t, xcb_shm_seg_t, uint32_t);
typedef xcb_void_cookie_t (*present_pixmap_fn)(xcb_connection_t *, xcb_window_t, xcb_pixmap_t, uint32_t,
                                               xcb_xfixes_region_t, xcb_xfixes_region_t, int16_t, int16_t,
                                               xcb_randr_crtc_t, xcb_sync_fence_t, xcb_sync_fence_t, uint32_t,
                                               uint64_t, uint64_t, uint64_t, uint32_t, const xcb_present_notify_t *);
typedef xcb_void_cookie_t (*copy_area_fn)(xcb_connection_t *, xcb_drawable_t, xcb_drawable_t, xcb_gcontext_t, int16_t,
                                         int16_t, int16_t, int16_t, uint16_t, uint16_t);
typedef int (*flush_fn)(xcb_connection_t *);
typedef xcb_void_cookie_t (*change_property_fn)(xcb_connection_t *, uint8_t, xcb_window_t, xcb_atom_t, xcb_atom_t,
                                                uint8_t, uint32_t, const void *);

static struct {
    create_window_fn create_window, create_window_checked;
    create_window_aux_fn create_window_aux, create_window_aux_checked;
    destroy_window_fn destroy_window, destroy_window_checked;
    put_image_fn put_image, put_image_checked;
    shm_put_image_fn shm_put_image, shm_put_image_checked;
    present_pixmap_fn present_pixmap, present_pixmap_checked;
    copy_area_fn copy_area, copy_area_checked;
    change_property_fn change_property, change_property_checked;
    flush_fn flush;
} X;

#define CREATE_WINDOW(name, slot, list_type)                                                                        \
    AGENT_EXPORT xcb_void_cookie_t name(xcb_connection_t *c, uint8_t depth, xcb_window_t wid, xcb_window_t parent,  \
                                        int16_t x, int16_t y, uint16_t width, uint16_t height, uint16_t border,      \
                                        uint16_t cls, xcb_visualid_t visual, uint32_t mask, list_type values)        \
    {                                                                                                               \
        AGENT_REAL(X.slot, LIBXCB, #name);                                                                          \
        xcb_void_cookie_t r = X.slot(c, depth, wid, parent, x, y, width, height, border, cls, visual, mask, values); \
        if (display_on())                                                                                           \
            created(xcb_is_root(c, parent), wid);                                                                   \
        return r;                                                                                                   \
    }

CREATE_WINDOW(xcb_create_window, create_window, const void *)
CREATE_WINDOW(xcb_create_window_checked, create_window_checked, const void *)
CREATE_WINDOW(xcb_create_window_aux, create_window_aux, const xcb_create_window_value_list_t *)
CREATE_WINDOW(xcb_create_window_aux_checked, create_window_aux_checked, const xcb_create_window_value_list_t *)

#define DESTROY_WINDOW(name, slot)                                          \
    AGENT_EXPORT xcb_void_cookie_t name(xcb_connection_t *c, xcb_window_t w) \
    {                                                                       \
        AGENT_REAL(X.slot, LIBXCB, #name);                                  \
        xcb_void_cookie_t r = X.slot(c, w);                                 \
        if (display_on())                                                   \
            display_gone(SK_X11, w);                                        \
        return r;                                                           \
    }

DESTROY_WINDOW(xcb_destroy_window, destroy_window)
DESTROY_WINDOW(xcb_destroy_window_checked, destroy_window_checked)

#define PUT_IMAGE(name, slot)                                                                                       \
    AGENT_EXPORT xcb_void_cookie_t name(xcb_connection_t *c, uint8_t format, xcb_drawable_t d, xcb_gcontext_t gc,  \
                                        uint16_t width, uint16_t height, int16_t x, int16_t y, uint8_t left_pad,    \
                                        uint8_t depth, uint32_t len, const uint8_t *data)                           \
    {                                                                                                               \
        AGENT_REAL(X.slot, LIBXCB, #name);                                                                          \
        xcb_void_cookie_t r = X.slot(c, format, d, gc, width, height, x, y, left_pad, depth, len, data);            \
        if (display_on())                                                                                           \
            display_frame(SK_X11, d, DS_X11_IMAGE);                                                      \
        return r;                                                                                                   \
    }

PUT_IMAGE(xcb_put_image, put_image)
PUT_IMAGE(xcb_put_image_checked, put_image_checked)

#define SHM_PUT_IMAGE(name, slot)                                                                                 \
    AGENT_EXPORT xcb_void_cookie_t name(xcb_connection_t *c, xcb_drawable_t d, xcb_gcontext_t gc, uint16_t tw,   \
                                        uint16_t th, uint16_t sx, uint16_t sy, uint16_t sw, uint16_t sh,          \
                                        int16_t dx, int16_t dy, uint8_t depth, uint8_t format, uint8_t send_event, \
                                        xcb_shm_seg_t seg, uint32_t offset)                                      \
    {                                                                                                             \
        AGENT_REAL(X.slot, LIBXCB_SHM, #name);                                                                    \
        xcb_void_cookie_t r = X.slot(c, d, gc, tw, th, sx, sy, sw, sh, dx, dy, depth, format, send_event, seg,    \
                                     offset);                                                                     \
        if (display_on())                                                                                         \
            display_frame(SK_X11, d, DS_X11_IMAGE);                                                    \
        return r;                                                                                                 \
    }

SHM_PUT_IMAGE(xcb_shm_put_image, shm_put_image)
SHM_PUT_IMAGE(xcb_shm_put_image_checked, shm_put_image_checked)

#define PRESENT_PIXMAP(name, slot)                                                                                 \
    AGENT_EXPORT xcb_void_cookie_t name(xcb_connection_t *c, xcb_window_t w, xcb_pixmap_t pixmap, uint32_t serial, \
                                        xcb_xfixes_region_t valid, xcb_xfixes_region_t update, int16_t x_off,      \
                                        int16_t y_off, xcb_randr_crtc_t crtc, xcb_sync_fence_t wait_fence,         \
                                        xcb_sync_fence_t idle_fence, uint32_t options, uint64_t target_msc,        \
                                        uint64_t divisor, uint64_t remainder, uint32_t notifies_len,               \
                                        const xcb_present_notify_t *notifies)                                      \
    {                                                                                                              \
        AGENT_REAL(X.slot, LIBXCB_PRESENT, #name);                                                                 \
        xcb_void_cookie_t r = X.slot(c, w, pixmap, serial, valid, update, x_off, y_off, crtc, wait_fence,          \
                                     idle_fence, options, target_msc, divisor, remainder, notifies_len, notifies); \
        if (display_on())                                                                                          \
            display_frame(SK_X11, w, DS_X11_PRESENT);                                                   \
        return r;                                                                                                  \
    }

PRESENT_PIXMAP(xcb_present_pixmap, present_pixmap)
PRESENT_PIXMAP(xcb_present_pixmap_checked, present_pixmap_checked)

/* A copy within the window itself (a scroll) is part of a frame too. */
#define COPY_AREA(name, slot)                                                                                    \
    AGENT_EXPORT xcb_void_cookie_t name(xcb_connection_t *c, xcb_drawable_t src, xcb_drawable_t dst,             \
                                        xcb_gcontext_t gc, int16_t sx, int16_t sy, int16_t dx, int16_t dy,       \
                                        uint16_t width, uint16_t height)                                         \
    {                                                                                                            \
        AGENT_REAL(X.slot, LIBXCB, #name);                                                                       \
        xcb_void_cookie_t r = X.slot(c, src, dst, gc, sx, sy, dx, dy, width, height);                            \
        if (display_on())                                                                                        \
            display_frame(SK_X11, dst, DS_X11_IMAGE);                                                 \
        return r;                                                                                                \
    }

COPY_AREA(xcb_copy_area, copy_area)
COPY_AREA(xcb_copy_area_checked, copy_area_checked)

#define CHANGE_PROPERTY(name, slot)                                                                               \
    AGENT_EXPORT xcb_void_cookie_t name(xcb_connection_t *c, uint8_t mode, xcb_window_t w, xcb_atom_t property,   \
                                        xcb_atom_t type, uint8_t format, uint32_t len, const void *data)          \
    {                                                                                                             \
        AGENT_REAL(X.slot, LIBXCB, #name);                                                                        \
        xcb_void_cookie_t r = X.slot(c, mode, w, property, type, format, len, data);                              \
        if (property == WM_CLASS_ATOM && format == 8 && data && mode == XCB_PROP_MODE_REPLACE && display_on())    \
            wm_class(w, data, len);                                                                               \
        return r;                                                                                                 \
    }

CHANGE_PROPERTY(xcb_change_property, change_property)
CHANGE_PROPERTY(xcb_change_property_checked, change_property_checked)

AGENT_EXPORT int xcb_flush(xcb_connection_t *c)
{
    AGENT_REAL(X.flush, LIBXCB, "xcb_flush");
    int64_t t = display_handover_time(); /* the requests leave as it starts */
    loop_present_begin(); /* libxcb's poll inside is not the loop's wait */
    int r = X.flush(c);
    loop_present_end();
    if (display_on())
        display_handover(SK_X11, t);
    return r;
}

/* ---- Xlib ---- */

typedef Window (*x_create_window_fn)(Display *, Window, int, int, unsigned, unsigned, unsigned, int, unsigned,
                                     Visual *, unsigned long, XSetWindowAttributes *);
typedef Window (*x_create_simple_fn)(Display *, Window, int, int, unsigned, unsigned, unsigned, unsigned long,
                                     unsigned long);
typedef int (*x_destroy_fn)(Display *, Window);
typedef int (*x_put_image_fn)(Display *, Drawable, GC, XImage *, int, int, int, int, unsigned, unsigned);
typedef Bool (*x_shm_put_image_fn)(Display *, Drawable, GC, XImage *, int, int, int, int, unsigned, unsigned, Bool);
typedef int (*x_copy_area_fn)(Display *, Drawable, Drawable, GC, int, int, unsigned, unsigned, int, int);
typedef int (*x_flush_fn)(Display *);
typedef int (*x_sync_fn)(Display *, Bool);
typedef int (*x_change_property_fn)(Display *, Window, Atom, Atom, int, int, const unsigned char *, int);

static struct {
    x_create_window_fn create_window;
    x_create_simple_fn create_simple;
    x_destroy_fn destroy;
    x_put_image_fn put_image;
    x_shm_put_image_fn shm_put_image;
    x_copy_area_fn copy_area;
    x_change_property_fn change_property;
    x_flush_fn flush;
    x_sync_fn sync;
} L;

AGENT_EXPORT Window XCreateWindow(Display *d, Window parent, int x, int y, unsigned int width, unsigned int height,
                                  unsigned int border, int depth, unsigned int cls, Visual *visual,
                                  unsigned long mask, XSetWindowAttributes *attrs)
{
    AGENT_REAL(L.create_window, LIBX11, "XCreateWindow");
    Window w = L.create_window(d, parent, x, y, width, height, border, depth, cls, visual, mask, attrs);
    if (w && display_on())
        created(xlib_is_root(d, parent), w);
    return w;
}

AGENT_EXPORT Window XCreateSimpleWindow(Display *d, Window parent, int x, int y, unsigned int width,
                                        unsigned int height, unsigned int border_width, unsigned long border,
                                        unsigned long background)
{
    AGENT_REAL(L.create_simple, LIBX11, "XCreateSimpleWindow");
    Window w = L.create_simple(d, parent, x, y, width, height, border_width, border, background);
    if (w && display_on())
        created(xlib_is_root(d, parent), w);
    return w;
}

AGENT_EXPORT int XDestroyWindow(Display *d, Window w)
{
    AGENT_REAL(L.destroy, LIBX11, "XDestroyWindow");
    int r = L.destroy(d, w);
    if (display_on())
        display_gone(SK_X11, w);
    return r;
}

AGENT_EXPORT int XPutImage(Display *d, Drawable drawable, GC gc, XImage *image, int src_x, int src_y, int dst_x,
                           int dst_y, unsigned int width, unsigned int height)
{
    AGENT_REAL(L.put_image, LIBX11, "XPutImage");
    int r = L.put_image(d, drawable, gc, image, src_x, src_y, dst_x, dst_y, width, height);
    if (display_on())
        display_frame(SK_X11, drawable, DS_X11_IMAGE);
    return r;
}

AGENT_EXPORT Bool XShmPutImage(Display *d, Drawable drawable, GC gc, XImage *image, int src_x, int src_y, int dst_x,
                               int dst_y, unsigned int width, unsigned int height, Bool send_event)
{
    AGENT_REAL(L.shm_put_image, LIBXEXT, "XShmPutImage");
    Bool r = L.shm_put_image(d, drawable, gc, image, src_x, src_y, dst_x, dst_y, width, height, send_event);
    if (display_on())
        display_frame(SK_X11, drawable, DS_X11_IMAGE);
    return r;
}

AGENT_EXPORT int XCopyArea(Display *d, Drawable src, Drawable dst, GC gc, int src_x, int src_y, unsigned int width,
                           unsigned int height, int dst_x, int dst_y)
{
    AGENT_REAL(L.copy_area, LIBX11, "XCopyArea");
    int r = L.copy_area(d, src, dst, gc, src_x, src_y, width, height, dst_x, dst_y);
    if (display_on())
        display_frame(SK_X11, dst, DS_X11_IMAGE);
    return r;
}

AGENT_EXPORT int XFlush(Display *d)
{
    AGENT_REAL(L.flush, LIBX11, "XFlush");
    int64_t t = display_handover_time(); /* the requests leave as it starts */
    loop_present_begin();
    int r = L.flush(d);
    loop_present_end();
    if (display_on())
        display_handover(SK_X11, t);
    return r;
}

/* It sends what is queued, then waits for the server: the hand-over is
 * before the wait. */
AGENT_EXPORT int XSync(Display *d, Bool discard)
{
    AGENT_REAL(L.sync, LIBX11, "XSync");
    if (display_on())
        display_handover(SK_X11, 0);
    return L.sync(d, discard);
}

AGENT_EXPORT int XChangeProperty(Display *d, Window w, Atom property, Atom type, int format, int mode,
                                 const unsigned char *data, int n)
{
    AGENT_REAL(L.change_property, LIBX11, "XChangeProperty");
    int r = L.change_property(d, w, property, type, format, mode, data, n);
    if (property == WM_CLASS_ATOM && format == 8 && data && n > 0 && mode == PropModeReplace && display_on())
        wm_class(w, (const char *)data, (size_t)n);
    return r;
}

/* ---- the outputs' refresh (RandR) ---- */

#define MAX_MODES 128

static pthread_mutex_t modes_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint32_t id;
    int64_t refresh_ns;
} modes[MAX_MODES];
static size_t n_modes;

/* A mode's frame period in ns, or 0 when it has no timings. */
static int64_t mode_period(uint32_t dot_clock, uint32_t htotal, uint32_t vtotal, uint32_t flags)
{
    double lines = (double)vtotal;
    if (flags & XCB_RANDR_MODE_FLAG_DOUBLE_SCAN)
        lines *= 2;
    if (flags & XCB_RANDR_MODE_FLAG_INTERLACE)
        lines /= 2;
    if (!dot_clock || !htotal || !vtotal)
        return 0;
    return (int64_t)((double)htotal * lines * 1e9 / (double)dot_clock);
}

static void mode_seen(uint32_t id, int64_t refresh_ns)
{
    pthread_mutex_lock(&modes_mu);
    size_t i = 0;
    while (i < n_modes && modes[i].id != id)
        i++;
    if (i == n_modes && n_modes < MAX_MODES)
        n_modes++;
    if (i < n_modes)
        modes[i].id = id, modes[i].refresh_ns = refresh_ns;
    pthread_mutex_unlock(&modes_mu);
}

/* A CRTC shows `mode` (0: none): its output's refresh. */
static void crtc_mode(uint64_t crtc, uint32_t mode)
{
    int64_t refresh = 0;
    pthread_mutex_lock(&modes_mu);
    for (size_t i = 0; i < n_modes && mode; i++)
        if (modes[i].id == mode)
            refresh = modes[i].refresh_ns;
    pthread_mutex_unlock(&modes_mu);
    display_output_refresh(SK_X11, crtc, refresh);
}

typedef xcb_randr_get_screen_resources_current_reply_t *(*res_current_reply_fn)(
    xcb_connection_t *, xcb_randr_get_screen_resources_current_cookie_t, xcb_generic_error_t **);
typedef xcb_randr_get_screen_resources_reply_t *(*res_reply_fn)(xcb_connection_t *,
                                                                 xcb_randr_get_screen_resources_cookie_t,
                                                                 xcb_generic_error_t **);
typedef xcb_randr_get_crtc_info_reply_t *(*crtc_reply_fn)(xcb_connection_t *, xcb_randr_get_crtc_info_cookie_t,
                                                          xcb_generic_error_t **);
typedef xcb_randr_mode_info_t *(*modes_fn)(const void *);
typedef int (*modes_length_fn)(const void *);
typedef XRRCrtcInfo *(*x_crtc_fn)(Display *, XRRScreenResources *, RRCrtc);

static struct {
    res_current_reply_fn res_current_reply;
    res_reply_fn res_reply;
    crtc_reply_fn crtc_reply;
    modes_fn current_modes, modes;
    modes_length_fn current_modes_length, modes_length;
    x_crtc_fn x_crtc;
} RR;

static void xcb_modes(const xcb_randr_mode_info_t *m, int n)
{
    for (int i = 0; m && i < n; i++)
        mode_seen(m[i].id, mode_period(m[i].dot_clock, m[i].htotal, m[i].vtotal, m[i].mode_flags));
}

AGENT_EXPORT xcb_randr_get_screen_resources_current_reply_t *xcb_randr_get_screen_resources_current_reply(
    xcb_connection_t *c, xcb_randr_get_screen_resources_current_cookie_t cookie, xcb_generic_error_t **e)
{
    AGENT_REAL(RR.res_current_reply, LIBXCB_RANDR, "xcb_randr_get_screen_resources_current_reply");
    if (!RR.res_current_reply)
        return NULL;
    xcb_randr_get_screen_resources_current_reply_t *r = RR.res_current_reply(c, cookie, e);
    AGENT_REAL(RR.current_modes, LIBXCB_RANDR, "xcb_randr_get_screen_resources_current_modes");
    AGENT_REAL(RR.current_modes_length, LIBXCB_RANDR, "xcb_randr_get_screen_resources_current_modes_length");
    if (r && display_on() && RR.current_modes && RR.current_modes_length)
        xcb_modes(RR.current_modes(r), RR.current_modes_length(r));
    return r;
}

AGENT_EXPORT xcb_randr_get_screen_resources_reply_t *xcb_randr_get_screen_resources_reply(
    xcb_connection_t *c, xcb_randr_get_screen_resources_cookie_t cookie, xcb_generic_error_t **e)
{
    AGENT_REAL(RR.res_reply, LIBXCB_RANDR, "xcb_randr_get_screen_resources_reply");
    if (!RR.res_reply)
        return NULL;
    xcb_randr_get_screen_resources_reply_t *r = RR.res_reply(c, cookie, e);
    AGENT_REAL(RR.modes, LIBXCB_RANDR, "xcb_randr_get_screen_resources_modes");
    AGENT_REAL(RR.modes_length, LIBXCB_RANDR, "xcb_randr_get_screen_resources_modes_length");
    if (r && display_on() && RR.modes && RR.modes_length)
        xcb_modes(RR.modes(r), RR.modes_length(r));
    return r;
}

/* The reply does not name its CRTC: its place on the screen, with the
 * connection, stands for it. */
AGENT_EXPORT xcb_randr_get_crtc_info_reply_t *xcb_randr_get_crtc_info_reply(xcb_connection_t *c,
                                                                            xcb_randr_get_crtc_info_cookie_t cookie,
                                                                            xcb_generic_error_t **e)
{
    AGENT_REAL(RR.crtc_reply, LIBXCB_RANDR, "xcb_randr_get_crtc_info_reply");
    if (!RR.crtc_reply)
        return NULL;
    xcb_randr_get_crtc_info_reply_t *r = RR.crtc_reply(c, cookie, e);
    if (r && display_on())
        crtc_mode(((uint64_t)(uintptr_t)c << 16) ^ r->x ^ ((uint64_t)r->y << 32), r->mode);
    return r;
}

static void xlib_modes(const XRRScreenResources *r)
{
    for (int i = 0; r && i < r->nmode; i++)
        mode_seen((uint32_t)r->modes[i].id, mode_period((uint32_t)r->modes[i].dotClock, r->modes[i].hTotal,
                                                        r->modes[i].vTotal, (uint32_t)r->modes[i].modeFlags));
}

AGENT_EXPORT XRRCrtcInfo *XRRGetCrtcInfo(Display *d, XRRScreenResources *res, RRCrtc crtc)
{
    AGENT_REAL(RR.x_crtc, LIBXRANDR, "XRRGetCrtcInfo");
    if (!RR.x_crtc)
        return NULL;
    XRRCrtcInfo *r = RR.x_crtc(d, res, crtc);
    if (r && display_on()) {
        xlib_modes(res);
        crtc_mode(((uint64_t)(uintptr_t)d << 16) ^ crtc, (uint32_t)r->mode);
    }
    return r;
}
