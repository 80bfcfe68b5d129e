/* A recording directory holds one NAME.ptrace (+ NAME.maps) per traced
 * process image; this lists them in name order. */
#include <pacer/trace.h>

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int pt_recording_list(const char *dir, char ***ret, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", dir, strerror(e));
        return -e;
    }
    char **list = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l <= 7 || strcmp(de->d_name + l - 7, ".ptrace") != 0)
            continue;
        char **nl = realloc(list, (n + 2) * sizeof *nl);
        char *path = malloc(strlen(dir) + l + 2);
        if (!nl || !path) {
            free(path);
            if (nl)
                list = nl;
            if (list) {
                list[n] = NULL; /* the previous allocation has room for it */
                pt_recording_list_free(list);
            }
            closedir(d);
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        list = nl;
        sprintf(path, "%s/%.*s", dir, (int)(l - 7), de->d_name);
        list[n++] = path;
        list[n] = NULL;
    }
    closedir(d);
    if (n == 0) {
        free(list);
        snprintf(err, errlen, "%s: no trace files (*.ptrace); record one with 'pacer trace record -o %s -- PROGRAM'",
                 dir, dir);
        return -ENOENT;
    }
    qsort(list, n, sizeof *list, by_name);
    *ret = list;
    return (int)n;
}

void pt_recording_list_free(char **list)
{
    if (!list)
        return;
    for (char **p = list; *p; p++)
        free(*p);
    free(list);
}

int pt_recording_walk(const char *dir, const pt_tree_options *opt, const pt_tree_ops *ops,
                      void (*on_process)(void *ud, const struct pt_file_header *h), void *ud,
                      pt_walk_stats *st, char *err, size_t errlen)
{
    char **list;
    int n = pt_recording_list(dir, &list, err, errlen);
    if (n < 0)
        return n;
    memset(st, 0, sizeof *st);
    int rc = 0;
    for (char **b = list; *b && rc == 0; b++) {
        size_t bl = strlen(*b);
        char *path = malloc(bl + 8);
        if (!path) {
            rc = -ENOMEM;
            snprintf(err, errlen, "out of memory");
            break;
        }
        sprintf(path, "%s.ptrace", *b);
        pt_reader *r;
        struct stat sb;
        if (stat(path, &sb) == 0)
            st->bytes += (uint64_t)sb.st_size;
        rc = pt_reader_open_file(path, &r, err, errlen);
        if (rc == 0) {
            sprintf(path, "%s.maps", *b);

            pt_symbols *syms = pt_symbols_new(path);
            if (on_process)
                on_process(ud, pt_reader_header(r));
            rc = pt_tree_run(r, syms, opt, ops, ud);
            if (rc < 0)
                snprintf(err, errlen, "%s", pt_reader_error(r)[0] ? pt_reader_error(r) : strerror(-rc));
            st->processes++;
            st->events += pt_reader_event_count(r);

            if (!pt_reader_complete(r))
                st->incomplete++;
            pt_symbols_free(syms);
            pt_reader_free(r);
        }
        free(path);
    }
    pt_recording_list_free(list);
    return rc;
}
