/* Cost of the agent's display and wait hooks (src/agent/display*.c,
 * loop_wait.c) per frame and per main-loop iteration, for a program
 * without a toolkit adapter, measured side by side in one process:
 *
 *   frame      one frame handed to the X server: a 1x1 image uploaded to a
 *              top-level window (xcb_put_image) and the connection flushed
 *              (xcb_flush) — through the PLT, where the agent's hooks sit
 *              when it is preloaded, and through libxcb's own functions
 *              (looked up in its handle: never hooked), the floor;
 *   iteration  one wait of the main loop that does not block (poll with
 *              no descriptors and a zero timeout): the same two ways,
 *              libc's poll from its handle as the floor.
 *
 * Run by display.py without the agent (the PLT column then costs what the
 * floor does) and under it, where the difference is the hooks' cost.
 *
 * Counted, not timed: the main thread's CPU time (CLOCK_THREAD_CPUTIME_ID),
 * so that the X server's work and other processes on the machine stay out.
 * A second thread idles as in any GUI program (glibc's system calls cost
 * more in a process with threads; the agent starts one). A frame's cost is
 * mostly its two system calls, and it depends on whether the X server was
 * asleep: the columns alternate in chunks of CHUNK frames, which goes first
 * alternating too, so that both meet the server alike; each round begins
 * with the server caught up. Prints the medians of ROUNDS rounds, of each
 * column and of the rounds' differences, in ns.
 *
 * libxcb polls inside xcb_flush: under the agent that poll is its hook's
 * too, in both columns (a verdict of a few loads: not a wait), so the
 * frame difference leaves that part out.
 */
#include <xcb/xcb.h>

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 101
#define N_FRAMES 1000
#define CHUNK 50
#define N_WAITS 20000

typedef xcb_void_cookie_t (*put_image_fn)(xcb_connection_t *, uint8_t, xcb_drawable_t, xcb_gcontext_t, uint16_t,
                                          uint16_t, int16_t, int16_t, uint8_t, uint8_t, uint32_t, const uint8_t *);
typedef int (*flush_fn)(xcb_connection_t *);
typedef int (*poll_fn)(struct pollfd *, nfds_t, int);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *idle(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, ROUNDS, sizeof(double), cmp);
    return v[ROUNDS / 2];
}

int main(int argc, char **argv)
{
    const char *label = argc > 1 ? argv[1] : "run";
    pthread_t thread;
    pthread_create(&thread, NULL, idle, NULL);
    /* a new Xvfb now and then refuses its first connections: try a while */
    xcb_connection_t *c = xcb_connect(NULL, NULL);
    for (int i = 0; i < 50 && xcb_connection_has_error(c); i++) {
        xcb_disconnect(c);
        nanosleep(&(struct timespec){0, 20 * 1000000}, NULL);
        c = xcb_connect(NULL, NULL);
    }
    if (xcb_connection_has_error(c)) {
        fprintf(stderr, "bench-display: cannot connect to the X server\n");
        return 2;
    }
    xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    xcb_window_t win = xcb_generate_id(c);
    xcb_create_window(c, XCB_COPY_FROM_PARENT, win, screen->root, 0, 0, 64, 64, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT,
                      screen->root_visual, 0, NULL);
    xcb_map_window(c, win);
    xcb_gcontext_t gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, win, 0, NULL);
    free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL)); /* all of it done */

    void *xcb = dlopen("libxcb.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    put_image_fn real_put = xcb ? (put_image_fn)dlsym(xcb, "xcb_put_image") : NULL;
    flush_fn real_flush = xcb ? (flush_fn)dlsym(xcb, "xcb_flush") : NULL;
    poll_fn real_poll = libc ? (poll_fn)dlsym(libc, "poll") : NULL;
    if (!real_put || !real_flush || !real_poll) {
        fprintf(stderr, "bench-display: libxcb's or libc's own functions not found\n");
        return 2;
    }
    uint8_t pixel[4] = {0x80, 0x40, 0x20, 0};
    uint8_t depth = screen->root_depth;
    double plt_frame[ROUNDS], floor_frame[ROUNDS], plt_wait[ROUNDS], floor_wait[ROUNDS], d_frame[ROUNDS],
        d_wait[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        /* the columns alternate in chunks, so that both meet the server in
         * the same state (a server that went idle costs each request a
         * wake-up); the round starts with the server caught up, and warm */
        free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL));
        for (int i = 0; i < CHUNK; i++) {
            real_put(c, XCB_IMAGE_FORMAT_Z_PIXMAP, win, gc, 1, 1, 0, 0, 0, depth, 4, pixel);
            real_flush(c);
        }
        plt_frame[r] = floor_frame[r] = 0;
        for (int chunk = 0; chunk < N_FRAMES / CHUNK; chunk++) {
            for (int k = 0; k < 2; k++) { /* which goes first alternates too */
                bool plt = (k == 0) == (chunk % 2 == 0);
                double t0 = now();
                if (plt)
                    for (int i = 0; i < CHUNK; i++) {
                        xcb_put_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, win, gc, 1, 1, 0, 0, 0, depth, 4, pixel);
                        xcb_flush(c);
                    }
                else
                    for (int i = 0; i < CHUNK; i++) {
                        real_put(c, XCB_IMAGE_FORMAT_Z_PIXMAP, win, gc, 1, 1, 0, 0, 0, depth, 4, pixel);
                        real_flush(c);
                    }
                *(plt ? &plt_frame[r] : &floor_frame[r]) += now() - t0;
            }
        }
        plt_frame[r] /= N_FRAMES;
        floor_frame[r] /= N_FRAMES;
        for (int k = 0; k < 2; k++) {
            bool plt = (k == 0) == (r % 2 == 0);
            double t0 = now();
            if (plt)
                for (int i = 0; i < N_WAITS; i++)
                    poll(NULL, 0, 0);
            else
                for (int i = 0; i < N_WAITS; i++)
                    real_poll(NULL, 0, 0);
            *(plt ? &plt_wait[r] : &floor_wait[r]) = (now() - t0) / N_WAITS;
        }
        d_frame[r] = plt_frame[r] - floor_frame[r];
        d_wait[r] = plt_wait[r] - floor_wait[r];
    }
    printf("%s: ns, median of %d rounds: frame %.1f, frame floor %.1f, iteration %.1f, iteration floor %.1f, "
           "frame difference %.1f, iteration difference %.1f\n",
           label, ROUNDS, median(plt_frame), median(floor_frame), median(plt_wait), median(floor_wait),
           median(d_frame), median(d_wait));
    xcb_disconnect(c);
    return 0;
}
