/* pacer trace example: count primes two ways and see where the time goes.
 *
 *   make -C examples/trace PKG_CONFIG_PATH=$PWD/build/meson-uninstalled
 *   build/src/cli/pacer trace record -o primes.trace -- examples/trace/primes 20000
 *   build/src/cli/pacer trace report primes.trace
 *   build/src/cli/pacer trace export primes.trace --format perfetto -o primes.pftrace
 */
#include <stdio.h>
#include <stdlib.h>

static int is_prime_slow(int n)
{
    if (n < 2)
        return 0;
    for (int d = 2; d < n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

static int is_prime_fast(int n)
{
    if (n < 2)
        return 0;
    for (int d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

static int count(int limit, int (*test)(int))
{
    int c = 0;
    for (int n = 0; n < limit; n++)
        c += test(n);
    return c;
}

int main(int argc, char **argv)
{
    int limit = argc > 1 ? atoi(argv[1]) : 20000;
    printf("%d primes below %d (slow)\n", count(limit, is_prime_slow), limit);
    printf("%d primes below %d (fast)\n", count(limit, is_prime_fast), limit);
    return 0;
}
