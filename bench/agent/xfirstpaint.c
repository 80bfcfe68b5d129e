/* xfirstpaint: when does a new window first show pixels, seen from the X
 * server, not from the app or the agent.
 *
 *   xfirstpaint [TIMEOUT_MS]
 *
 * Connects to $DISPLAY, watches the root window for new children (every
 * toplevel under Xvfb, which runs no window manager), and asks the DAMAGE
 * extension to report the first change to each one's contents. Prints
 * "ready" once watching, then, at the first damage event of any new
 * toplevel, "paint NS" with NS the CLOCK_MONOTONIC time the event was read,
 * and exits 0. Exits 1 at the timeout (default 60000 ms), 2 when the server
 * lacks DAMAGE.
 *
 * GDK gives its toplevels no background, so the server paints nothing on
 * map: the first damage is the app's first frame reaching the server. The
 * read happens after the server sent the event; the launcher takes the
 * same clock before it spawns the app.
 */
#include <X11/Xlib.h>
#include <X11/extensions/Xdamage.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
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
    for (;;) {
        while (XPending(d)) {
            XEvent ev;
            XNextEvent(d, &ev);
            if (ev.type == CreateNotify && ev.xcreatewindow.parent == root) {
                XDamageCreate(d, ev.xcreatewindow.window, XDamageReportNonEmpty);
                XFlush(d);
            } else if (ev.type == damage_event + XDamageNotify) {
                printf("paint %lld\n", now_ns());
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
