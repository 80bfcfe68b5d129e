/* sdk_app: a program built against the installed SDK (libpacer-dev:
 * pacer/pacer.h, `pkg-config --cflags --libs pacer`). It measures three
 * windows, each drawn once, and writes their records to OUT.
 * Usage: sdk_app OUT */
#include <pacer/pacer.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sdk_app OUT\n");
        return 2;
    }
    pacer_options o = {.app_name = "sdk-app", .app_version = "1.0", .out_path = argv[1]};
    pacer_t *p;
    char *err = NULL;
    if (pacer_new(&o, &p, &err) < 0) {
        fprintf(stderr, "sdk_app: %s\n", err ? err : "pacer_new failed");
        return 1;
    }
    for (uint64_t i = 1; i <= 3; i++) {
        pacer_page_create(p, i, "SdkWindow", PACER_PAGE_WINDOW);
        pacer_page_draw(p, i);
        pacer_page_destroy(p, i);
    }
    pacer_free(p);
    return 0;
}
