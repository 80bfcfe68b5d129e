/* pacer bench: a private X display (bench_display.h). */
#include "bench_display.h"

#include "bench_env.h"

#include <pacer/base/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int bench_display_start(bench_display *d, bool nice_set, int nice, char *err, size_t err_len)
{
    *d = (bench_display){0};
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(err, err_len, "cannot make a pipe for Xvfb: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, err_len, "cannot fork for Xvfb: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int w = dup(fds[1]); /* without O_CLOEXEC: Xvfb writes the display number to it */
        char fd[16];
        snprintf(fd, sizeof(fd), "%d", w);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        /* a ^C in the terminal reaches pacer, which stops it */
        if (bench_own_session(nice_set, nice) < 0)
            _exit(126);
        execlp("Xvfb", "Xvfb", "-displayfd", fd, "-screen", "0", "1280x1024x24", "-nolisten", "tcp", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    d->pid = pid;
    char buf[32];
    size_t n = 0;
    int64_t deadline = mono_ns() + 30 * 1000000000LL;
    while (n < sizeof(buf) - 1 && (n == 0 || buf[n - 1] != '\n')) {
        int64_t left = (deadline - mono_ns()) / 1000000;
        if (left <= 0)
            break;
        struct pollfd p = {fds[0], POLLIN, 0};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        ssize_t got = read(fds[0], buf + n, sizeof(buf) - 1 - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fds[0]);
    buf[n] = 0;
    int status;
    if (n == 0 || buf[n - 1] != '\n') {
        if (waitpid(pid, &status, WNOHANG) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 127)
            snprintf(err, err_len, "no display and no Xvfb to make one (Debian: apt install xvfb)");
        else
            snprintf(err, err_len, "Xvfb did not start within 30 s");
        bench_display_stop(d);
        return -1;
    }
    buf[strcspn(buf, "\n")] = 0;
    snprintf(d->name, sizeof(d->name), ":%s", buf);
    return 0;
}

void bench_display_stop(bench_display *d)
{
    if (d->pid <= 0)
        return;
    kill(d->pid, SIGTERM);
    int status;
    for (int i = 0; i < 500; i++) {
        pid_t r = waitpid(d->pid, &status, WNOHANG);
        if (r == d->pid || (r < 0 && errno == ECHILD)) {
            d->pid = 0;
            return;
        }
        sleep_ms(10);
    }
    kill(d->pid, SIGKILL);
    waitpid(d->pid, &status, 0);
    d->pid = 0;
}
