/* clock.h — wall-clock seconds for solve times and search deadlines. */
#ifndef MG_CLOCK_H
#define MG_CLOCK_H
/* Seconds on a monotonic clock (only differences mean anything). */
double mg_seconds(void);
#endif
