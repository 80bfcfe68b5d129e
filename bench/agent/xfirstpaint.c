/* xfirstpaint: when does a new window first show pixels, seen from the X
 * server, not from the app or the agent.
 *
 *   xfirstpaint [--after-map] [TIMEOUT_MS]
 *
 * Connects to $DISPLAY, watches the root window for new children (every
 * toplevel under Xvfb, which runs no window manager), and asks the DAMAGE
 * extension to report changes to each one's contents. Prints "ready" once
 * watching, then, at the first damage event of any new toplevel, "paint NS
 * WINDOW" with NS the CLOCK_MONOTONIC time the event was read, and exits
 * 0. Exits 1 at the timeout (default 60000 ms), 2 when the server lacks
 * DAMAGE.
 *
 * Mapping a window may damage it in the X server (Xvfb reports the whole
 * window as the MapWindow request is processed, for some windows, with or
 * without a background to paint): such an event is the map, not the app's
 * first frame. With --after-map, on the window's MapNotify the watcher
 * sends a request of its own (NoOp) and notes its sequence number: an
 * event carries the sequence of the watcher's last request the server had
 * processed when it generated it, so damage generated before the NoOp was
 * processed (the map's) has a lower one and is skipped; the first damage
 * after it (every damage is reported, DamageReportRawRectangles) is the
 * app's first drawing reaching the server (each skipped one is printed as
 * "skip NS WINDOW" before it). Without it the first event is
 * taken, map included (the time-to-first-paint benchmark, ttff.py). The
 * read happens after the server sent the event; the launcher takes the
 * same clock before it spawns the app.
 */
#include <X11/Xlib.h>
#include <X11/extensions/Xdamage.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* XDamageCreate on an input-only window, or one already gone, is refused:
 * not a reason to stop watching. */
static int ignore_errors(Display *d, XErrorEvent *e)
{
    (void)d;
    (void)e;
    return 0;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int after_map = argc > 1 && strcmp(argv[1], "--after-map") == 0;
    if (after_map)
        argc--, argv++;
    long timeout_ms = argc > 1 ? strtol(argv[1], NULL, 10) : 60000;
    /* a busy Xvfb now and then resets a new connection: try again a while */
    Display *d = NULL;
    for (int i = 0; i < 50 && !(d = XOpenDisplay(NULL)); i++) {
        struct timespec pause = {0, 20 * 1000000};
        nanosleep(&pause, NULL);
    }
    if (!d) {
        fprintf(stderr, "xfirstpaint: cannot open display\n");
        return 2;
    }
    int damage_event, damage_error;
    if (!XDamageQueryExtension(d, &damage_event, &damage_error)) {
        fprintf(stderr, "xfirstpaint: the X server has no DAMAGE extension\n");
        return 2;
    }
    XSetErrorHandler(ignore_errors);
    Window root = DefaultRootWindow(d);
    XSelectInput(d, root, SubstructureNotifyMask);
    XSync(d, False);
    puts("ready");
    fflush(stdout);

    long long deadline = now_ns() + timeout_ms * 1000000LL;
    struct pollfd pfd = {ConnectionNumber(d), POLLIN, 0};
    Window mapped = None;       /* --after-map: the window mapped last, */
    unsigned long marker = 0;   /* and the serial of the NoOp sent at its MapNotify */
    for (;;) {
        while (XPending(d)) {
            XEvent ev;
            XNextEvent(d, &ev);
            if (ev.type == CreateNotify && ev.xcreatewindow.parent == root) {
                XDamageCreate(d, ev.xcreatewindow.window,
                              after_map ? XDamageReportRawRectangles : XDamageReportNonEmpty);
                XFlush(d);
            } else if (ev.type == MapNotify && after_map) {
                mapped = ev.xmap.window;
                marker = NextRequest(d);
                XNoOp(d);
                XFlush(d);
            } else if (ev.type == damage_event + XDamageNotify) {
                XDamageNotifyEvent *de = (XDamageNotifyEvent *)&ev;
                if (after_map && de->drawable != mapped)
                    continue; /* a window not shown yet */
                if (after_map && de->serial < marker) {
                    printf("skip %lld 0x%lx\n", now_ns(), (unsigned long)de->drawable); /* the map's */
                    continue;
                }
                printf("paint %lld 0x%lx\n", now_ns(), (unsigned long)de->drawable);
                fflush(stdout);
                return 0;
            }
        }
        long long left = deadline - now_ns();
        if (left <= 0)
            return 1;
        poll(&pfd, 1, (int)(left / 1000000 + 1));
    }
}
