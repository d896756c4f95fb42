/* step_time.c — times a generated training step: warm-up, then `reps` timed calls of
 * NAME_train_step on random inputs; prints one line per call ("step_ms WALL CPU": wall-clock and
 * process CPU milliseconds — on a shared machine the CPU time leaves out the time slices other
 * processes took) so the caller can take medians across interleaved runs. Built per model (and budget) by bench/run.sh, like the
 * demo trainer (MODEL, MODEL_UPPER, MODEL_HEADER).
 *   usage: step_time [REPS] [INT_RANGE]   i32 inputs (labels, token ids) are drawn from
 *                                         [0, INT_RANGE), default 10: the model's class count */
#include MODEL_HEADER

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(MODEL, CAT(_, name))
#define UP(name) CAT(MODEL_UPPER, CAT(_, name))

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    int range = argc > 2 ? atoi(argv[2]) : 10;
    if (range < 1) range = 1;
    void *params = malloc(UP(PARAM_BYTES)), *grads = malloc(UP(PARAM_BYTES)), *ws = malloc(UP(WORKSPACE_BYTES) + 1);
    const void *inputs[UP(NUM_INPUTS)];
    unsigned long long s = 1;
    for (int i = 0; i < UP(NUM_INPUTS); i++) {
        const mg_tensor_desc *d = &FN(inputs_desc)[i];
        void *buf = malloc(d->bytes);
        for (size_t k = 0; k < d->bytes / 4; k++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            if (d->dtype == MG_I32) ((int *)buf)[k] = (int)((s >> 33) % (unsigned)range);
            else ((float *)buf)[k] = (float)((s >> 40) & 0xffff) / 65536.0f;
        }
        inputs[i] = buf;
    }
    FN(init_params)(params, 1);
#if UP(HAS_STATE) /* batch_norm running statistics, dropout's step counter */
    void *state = malloc(UP(STATE_BYTES));
    FN(init_state)(state);
#define STEP() FN(train_step)(params, grads, inputs, ws, state)
#else
#define STEP() FN(train_step)(params, grads, inputs, ws)
#endif
    STEP(); /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        volatile float loss = STEP();
        (void)loss;
        double c1 = now(CLOCK_PROCESS_CPUTIME_ID), t1 = now(CLOCK_MONOTONIC);
        printf("step_ms %.3f %.3f\n", 1e3 * (t1 - t0), 1e3 * (c1 - c0));
    }
    return 0;
}
