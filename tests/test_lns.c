/* test_lns.c — the windows of sched_lns.c (bench/lns_plan's large neighbourhood search). What a
 * user of the tool relies on: every schedule a window keeps is a plan the verifier accepts
 * within the cap, it never costs more, and a window over the whole schedule, which is then
 * Checkmate's program (solve_exact.c) with each stage's order taken from the schedule where it
 * has steps there, finds a schedule as cheap as that program's optimum on these problems. */
#include "plan.h"
#include "sched_lns.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>

/* The compute sequence of p (every step a computation). */
static int *seq_of(const mg_plan *p, int room)
{
    int *seq = malloc((size_t)room * sizeof *seq);
    ck_assert_ptr_nonnull(seq);
    for (int s = 0; s < p->nsteps; s++) {
        ck_assert_int_eq(p->steps[s].kind, MG_STEP_COMPUTE);
        seq[s] = p->steps[s].node;
    }
    return seq;
}

START_TEST(test_windows_random)
{
    uint64_t seed = 777;
    int improved = 0, whole = 0;
    for (int k = 0; k < (TU_SANITIZED ? 6 : 10); k++) {
        mg_problem *pr = tu_random_problem(&seed, 7 + k % 4, 6 + k % 3, 1);
        mg_diag d = {0};
        mg_solution sa;
        ck_assert_int_eq(mg_solve(pr, MG_SOLVER_STORE_ALL, INT64_MAX, 0, 0, &sa, &d), MG_OK);
        for (int pct = 80; pct >= 50; pct -= 15) {
            int64_t budget = sa.store_all_bytes * pct / 100;
            /* a poor start: the eviction scheduler under a cap well below the budget */
            mg_plan *p0 = NULL;
            for (int64_t cap = budget * 3 / 4; cap <= budget && !p0; cap += 64) {
                mg_sched_opts o = {.cap = cap, .policy = MG_EVICT_SIZE_DIST};
                ck_assert_int_eq(mg_schedule(pr, &o, &p0, &d), MG_OK);
            }
            if (!p0) continue;
            int ntg = pr->n, room = 8 * ntg + 64, T = p0->nsteps;
            int *seq = seq_of(p0, room);
            double cost = p0->flops_executed;
            /* windows of 3 target positions, sliding: each kept schedule verified, never dearer */
            for (int a = 0; a < ntg; a += 2) {
                mg_lns_window_result r;
                ck_assert_int_eq(mg_lns_window(pr, seq, &T, room, a, a + 3, budget, 20, 0, NULL, &r, &d), MG_OK);
                ck_assert_msg(r.solved, "problem %d at %d%%: window %d: no answer from CBC", k, pct, a);
                mg_plan *p = mg_pb_replay(pr, seq, T, NULL);
                ck_assert_ptr_nonnull(p);
                ck_assert_int_le(mg_plan_peak_live(p), budget);
                ck_assert_int_eq(mg_arena_assign(p, &d), MG_OK);
                ck_assert_msg(mg_plan_verify(p, pr, &d) == MG_OK, "problem %d at %d%%: %s", k, pct, d.msg);
                ck_assert(p->flops_executed <= cost);
                improved += p->flops_executed < cost;
                cost = p->flops_executed;
                mg_plan_free(p);
            }
            /* the whole schedule as one window: Checkmate's program, but each stage's order the
             * current schedule's where it has steps there (graph order otherwise), which may allow
             * a cheaper schedule or, in principle, exclude Checkmate's; on these problems it is
             * never dearer */
            mg_exact_result ex = {0};
            ck_assert_int_eq(mg_solve_exact(pr, budget, 30, HUGE_VAL, &ex, &d), MG_OK);
            mg_lns_window_result r;
            ck_assert_int_eq(mg_lns_window(pr, seq, &T, room, 0, ntg, budget, 30, 0, NULL, &r, &d), MG_OK);
            mg_plan *p = mg_pb_replay(pr, seq, T, NULL);
            ck_assert_ptr_nonnull(p);
            if (ex.proven && ex.plan && r.proven) {
                ck_assert_msg(p->flops_executed <= ex.plan->flops_executed,
                              "problem %d at %d%%: the whole window %.0f, Checkmate's program %.0f", k, pct,
                              p->flops_executed, ex.plan->flops_executed);
                whole++;
            }
            ck_assert_int_eq(mg_arena_assign(p, &d), MG_OK);
            ck_assert_msg(mg_plan_verify(p, pr, &d) == MG_OK, "problem %d at %d%%: %s", k, pct, d.msg);
            mg_plan_free(p);
            mg_plan_free(ex.plan);
            mg_plan_free(p0);
            free(seq);
        }
        mg_plan_free(sa.plan);
        mg_problem_free(pr);
    }
    ck_assert_msg(improved >= (TU_SANITIZED ? 2 : 3), "windows improved a poor start only %d times", improved);
    ck_assert_msg(whole >= (TU_SANITIZED ? 2 : 5), "only %d whole-window comparisons", whole);
}
END_TEST

static Suite *lns_suite(void)
{
    Suite *s = suite_create("lns");
    TCase *c = tcase_create("windows");
    tcase_set_timeout(c, 600);
    tcase_add_test(c, test_windows_random);
    suite_add_tcase(s, c);
    return s;
}

int main(void) { return tu_run_suite(lns_suite()); }
