/* clock.c — the one monotonic clock every solve time and search deadline is read from. */
#include "clock.h"

#include <time.h>

double mg_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
