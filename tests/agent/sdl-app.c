/* sdl-app: an SDL2 program with no toolkit the agent knows, that the agent
 * tests run under `pacer run` (test_toolkit_free.py) to check start-up,
 * frames and main-loop jank measured from the display and the event
 * loop's waits alone. It contains no pacer code.
 *
 *   sdl-app [--run-ms N] [--stall-at-ms S] [--stall-ms M] [--gl]
 *
 * It opens a 320x240 window and renders a frame per event-loop iteration
 * (SDL_WaitEventTimeout, 16 ms) for N ms (default 3000), each a new
 * colour; S ms after its first frame (default 1000) one iteration spends
 * M ms (default 900; 0: none) busy inside sdl_app_stall() before it
 * renders. Software rendering (the window's surface) unless --gl (SDL's
 * default renderer: OpenGL where there is one). Prints "stalled ms=D", its
 * own measure of the stall, and "frames=F", the frames it presented.
 */
#include <SDL.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Busy for ms, on the main thread (a computation, not a sleep); its own
 * frame in the stack. */
static __attribute__((noinline)) double sdl_app_stall(unsigned ms)
{
    double until = now_ms() + ms;
    volatile double x = 0;
    while (now_ms() < until)
        x += 1.0;
    return x;
}

int main(int argc, char **argv)
{
    unsigned run_ms = 3000, stall_at_ms = 1000, stall_ms = 900;
    int gl = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--run-ms") == 0 && i + 1 < argc)
            run_ms = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--stall-at-ms") == 0 && i + 1 < argc)
            stall_at_ms = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--stall-ms") == 0 && i + 1 < argc)
            stall_ms = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--gl") == 0)
            gl = 1;
        else {
            fprintf(stderr, "usage: sdl-app [--run-ms N] [--stall-at-ms S] [--stall-ms M] [--gl]\n");
            return 2;
        }
    }
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
        fprintf(stderr, "sdl-app: %s\n", SDL_GetError());
        return 1;
    }
    SDL_Window *win = SDL_CreateWindow("sdl-app", SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED, 320, 240, 0);
    SDL_Renderer *ren = win ? SDL_CreateRenderer(win, -1, gl ? 0 : SDL_RENDERER_SOFTWARE) : NULL;
    if (!ren) {
        fprintf(stderr, "sdl-app: %s\n", SDL_GetError());
        return 1;
    }
    double first = 0, stalled = -1;
    unsigned frames = 0;
    for (int running = 1; running;) {
        SDL_Event e;
        if (SDL_WaitEventTimeout(&e, 16)) {
            do {
                if (e.type == SDL_QUIT)
                    running = 0;
            } while (SDL_PollEvent(&e));
        }
        double t = now_ms();
        if (first && stall_ms && stalled < 0 && t - first >= stall_at_ms) {
            double t0 = now_ms();
            sdl_app_stall(stall_ms);
            stalled = now_ms() - t0;
        }
        SDL_SetRenderDrawColor(ren, (Uint8)(frames * 7), (Uint8)(frames * 3), 128, 255);
        SDL_RenderClear(ren);
        SDL_RenderPresent(ren);
        frames++;
        if (!first)
            first = now_ms();
        if (now_ms() - first >= run_ms)
            running = 0;
    }
    printf("stalled ms=%.6f\nframes=%u\n", stalled, frames);
    SDL_DestroyRenderer(ren);
    SDL_DestroyWindow(win);
    SDL_Quit();
    return 0;
}
