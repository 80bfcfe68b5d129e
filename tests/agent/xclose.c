/* xclose: asks X11 windows to close the way a window manager does, with a
 * WM_DELETE_WINDOW client message (the agent tests have no window manager
 * on their Xvfb). GTK answers it as a click on the window's close button:
 * close-request, then destroy (or hide, for a window that hides on close).
 *
 *   xclose WINDOW-ID...      the windows named (decimal or 0x hex, as
 *                            `xdotool search` prints them)
 * Exits 0 when every message was sent, 1 otherwise.
 */
#include <X11/Xlib.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    Display *d = XOpenDisplay(NULL);
    if (!d) {
        fprintf(stderr, "xclose: cannot open display\n");
        return 1;
    }
    Atom protocols = XInternAtom(d, "WM_PROTOCOLS", False);
    Atom del = XInternAtom(d, "WM_DELETE_WINDOW", False);
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        Window w = (Window)strtoul(argv[i], NULL, 0);
        XEvent ev = {0};
        ev.xclient.type = ClientMessage;
        ev.xclient.window = w;
        ev.xclient.message_type = protocols;
        ev.xclient.format = 32;
        ev.xclient.data.l[0] = (long)del;
        ev.xclient.data.l[1] = CurrentTime;
        if (!XSendEvent(d, w, False, NoEventMask, &ev))
            rc = 1;
    }
    XSync(d, False);
    XCloseDisplay(d);
    return rc;
}
