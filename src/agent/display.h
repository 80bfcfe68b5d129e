/* Frames where they reach the display (display.c): what the display hooks
 * share.
 *
 *   display.c          the surfaces: which are top-levels, their frames,
 *                      the process's first frame presented;
 *   display_wayland.c  libwayland-client's requests: wl_surface commits
 *                      with a buffer, xdg_toplevel, app ids;
 *   display_x11.c      X11: windows created on a root, image uploads to
 *                      them (xcb_put_image, xcb_shm_put_image, XPutImage,
 *                      XShmPutImage), Present (xcb_present_pixmap),
 *                      WM_CLASS;
 *   display_gl.c       GLX and EGL buffer swaps;
 *   display_vulkan.c   vkQueuePresentKHR, and which native window a
 *                      swapchain presents to.
 */
#ifndef PACER_AGENT_DISPLAY_H
#define PACER_AGENT_DISPLAY_H

#include "agent.h"

/* How a frame reached the display: the `source` of frames records and of
 * the start-up's first frame. */
typedef enum display_source {
    DS_WAYLAND,
    DS_X11_PRESENT,
    DS_X11_IMAGE,
    DS_GLX,
    DS_EGL,
    DS_VULKAN,
} display_source;

/* What a surface handle is: a wl_surface, an X11 window (XID), an
 * EGLSurface or a VkSwapchainKHR whose native window is unknown. */
typedef enum surface_kind {
    SK_WAYLAND = 1,
    SK_X11,
    SK_EGL,
    SK_VULKAN,
} surface_kind;

/* Whether the display hooks have anything to do: the agent is active.
 * Any thread; one atomic load. */
bool display_on(void);

/* A surface became a top-level (an xdg_toplevel made for it, an X11
 * window created on a root). Any thread. */
void display_toplevel(surface_kind kind, uint64_t handle);
/* The surface was destroyed: its frames are written (final), it is
 * forgotten. Any thread. */
void display_gone(surface_kind kind, uint64_t handle);
/* The application's name for a top-level (xdg_toplevel's app id, the
 * class of X11's WM_CLASS): its frames records' `window`. */
void display_name(surface_kind kind, uint64_t handle, const char *name, size_t len);
/* The refresh interval of an output, in ns, as the program itself learned
 * it (Wayland: a wl_output's current mode; X11: the mode of a CRTC in use,
 * from the RandR replies the program read); 0 forgets the output. Frames
 * on surfaces of that family are graded against it when every output of
 * the family known has the same one, else against 60 Hz. Any thread. */
void display_output_refresh(surface_kind family, uint64_t output, int64_t refresh_ns);
/* Frames presented on this surface go through an outer API (Vulkan) whose
 * present is counted: the protocol's own (a Present from a driver's
 * thread) are not counted again. */
void display_outer_owned(surface_kind kind, uint64_t handle);

/* A frame queued for the display on `handle` (a commit with a buffer, a
 * Present, an image upload or copy): it reaches the display at the next
 * hand-over. Inside an outer present (display_outer_*) it only tells the
 * outer which surface it went to. Any thread. */
void display_frame(surface_kind kind, uint64_t handle, display_source source);

/* The client library sends what it queued (a flush, or a call that
 * flushes before it waits; the main loop's wait): the frames pending on
 * surfaces of `family` (0: all) reached the display at `t` (0: now). Any
 * thread; a few loads when nothing waits for it. */
void display_handover(surface_kind family, int64_t t);
/* The time to give display_handover for a flush about to start: now when
 * something waits for a hand-over, else 0 (no clock read). Any thread. */
int64_t display_handover_time(void);

/* An outer present (a GLX, EGL or Vulkan swap) on this thread: the frames
 * the driver hands the display inside it are its one frame, counted at
 * the end on the surface they went to, else on (kind, handle), a surface
 * taken for a top-level. */
void display_outer_begin(display_source source);
void display_outer_end(surface_kind kind, uint64_t handle, int64_t t);

#endif
