/* test_e2e.c — the user's path end to end: `memgrad compile` a model, link the object into a
 * C program with `cc app.c mlp.o -lm` and nothing else, and run it. The programs check that
 * training lowers the loss, that the step is reentrant (the workspace's prior contents and
 * location do not matter; two threads on separate buffers get the sequential results), that
 * two models link into one program, and that the header's figures describe the object. */
#include "testutil.h"

#include <check.h>
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dir;

static void setup(void) { dir = tu_tmpdir(); }
static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
}

static int sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh(char **out, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return tu_run(cmd, out);
}

/* A program that trains the example MLP on a synthetic, learnable task with plain SGD. */
static const char *train_app =
    "#include \"mlp.h\"\n"
    "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "static unsigned long long s = 42;\n"
    "static double rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (double)(s >> 11) / 9007199254740992.0; }\n"
    "static int padding_zero(const void *blob) {  /* bytes between and after the tensors */\n"
    "  const unsigned char *b = blob; size_t at = 0;\n"
    "  for (int i = 0; i < MLP_NUM_PARAMS; i++) {\n"
    "    for (; at < mlp_params_desc[i].offset; at++) if (b[at]) return 0;\n"
    "    at = mlp_params_desc[i].offset + mlp_params_desc[i].bytes;\n"
    "  }\n"
    "  for (; at < MLP_PARAM_BYTES; at++) if (b[at]) return 0;\n"
    "  return 1;\n"
    "}\n"
    "int main(void) {\n"
    "  if (MLP_NUM_PARAMS != 4 || MLP_NUM_INPUTS != 2 || MLP_NUM_OUTPUTS != 1) return 10;\n"
    "  if (strcmp(mlp_params_desc[0].name, \"w1\") || mlp_params_desc[0].shape[0] != 784 || mlp_params_desc[0].shape[1] != 256) return 11;\n"
    "  if (mlp_inputs_desc[1].dtype != MG_I32 || mlp_outputs_desc[0].bytes != 128 * 10 * 4) return 12;\n"
    "  size_t end = 0;\n"
    "  for (int i = 0; i < MLP_NUM_PARAMS; i++) if (mlp_params_desc[i].offset + mlp_params_desc[i].bytes > end) end = mlp_params_desc[i].offset + mlp_params_desc[i].bytes;\n"
    "  if (end > MLP_PARAM_BYTES) return 13;\n"
    "  float *p = malloc(MLP_PARAM_BYTES), *g = malloc(MLP_PARAM_BYTES), *g2 = malloc(MLP_PARAM_BYTES);\n"
    "  unsigned char *ws = malloc(MLP_WORKSPACE_BYTES), *ws2 = malloc(MLP_WORKSPACE_BYTES + 64);\n"
    "  float *x = malloc(128 * 784 * 4); int *y = malloc(128 * 4);\n"
    "  const void *in[2] = {x, y};\n"
    "  size_t used = 0;\n"
    "  for (int i = 0; i < MLP_NUM_PARAMS; i++) used += mlp_params_desc[i].bytes;\n"
    "  if (used == MLP_PARAM_BYTES) return 16;  /* the blob must have padding for the checks below */\n"
    "  memset(p, 0xaa, MLP_PARAM_BYTES); memset(g, 0xaa, MLP_PARAM_BYTES);\n"
    "  mlp_init_params(p, 1);\n"
    "  if (!padding_zero(p)) return 17;  /* init_params defines the whole blob */\n"
    "  float first = 0, last = 0;\n"
    "  for (int step = 0; step < 60; step++) {\n"
    "    for (int b = 0; b < 128; b++) { int c = (int)(rnd() * 10); y[b] = c;\n"
    "      for (int k = 0; k < 784; k++) x[b * 784 + k] = (float)(rnd() * 0.5 + (k % 10 == c ? 0.5 : 0.0)); }\n"
    "    float loss = mlp_train_step(p, g, in, ws);\n"
    "    if (!isfinite(loss)) return 14;\n"
    "    if (step == 0) {\n"
    "      if (!padding_zero(g)) return 18;  /* so does train_step for grads */\n"
    "      memset(ws2, 0xff, MLP_WORKSPACE_BYTES + 64);  /* NaN-filled, misaligned: must not matter */\n"
    "      float again = mlp_train_step(p, g2, in, ws2 + 4);\n"
    "      if (again != loss || memcmp(g, g2, MLP_PARAM_BYTES)) return 15;\n"
    "      first = loss;\n"
    "    }\n"
    "    last = loss;\n"
    "    for (int i = 0; i < MLP_NUM_PARAMS; i++) {\n"
    "      float *pp = (float *)((char *)p + mlp_params_desc[i].offset), *gg = (float *)((char *)g + mlp_params_desc[i].offset);\n"
    "      for (size_t k = 0; k < mlp_params_desc[i].bytes / 4; k++) pp[k] -= 0.1f * gg[k];\n"
    "    }\n"
    "  }\n"
    "  float *logits = malloc(128 * 10 * 4); void *out[1] = {logits};\n"
    "  mlp_forward(p, in, out, ws);\n"
    "  int correct = 0;\n"
    "  for (int b = 0; b < 128; b++) { int best = 0; for (int c = 1; c < 10; c++) if (logits[b * 10 + c] > logits[b * 10 + best]) best = c; correct += best == y[b]; }\n"
    "  printf(\"first %.4f last %.4f accuracy %d/128\\n\", first, last, correct);\n"
    "  return 0;\n"
    "}\n";

/* Compiles examples/mlp.mg, links app with `cc app.c mlp.o -lm` alone and runs it; its output. */
static char *run_mlp_app(const char *app)
{
    char path[4200], *out = NULL;
    snprintf(path, sizeof path, "%s/app.c", dir);
    ck_assert_int_eq(tu_write(path, app), 0);
    int rc = sh(&out, "cd '%s' && '%s' compile '%s/examples/mlp.mg' -o mlp.o --header mlp.h && cc app.c mlp.o -lm -o app && ./app",
                dir, MG_MEMGRAD, MG_SOURCE_DIR);
    ck_assert_msg(rc == 0, "compile/link/run failed (status %d):\n%s", rc, out);
    return out;
}

START_TEST(train_linked_with_cc_only)
{
    char *out = run_mlp_app(train_app);
    float first, last;
    int correct;
    ck_assert_msg(sscanf(out, "first %f last %f accuracy %d", &first, &last, &correct) == 3, "output: %s", out);
    ck_assert_msg(first > 2.0f && last < 0.5f * first, "loss did not fall enough: %s", out);
    ck_assert_msg(correct > 100, "forward pass accuracy too low: %s", out);
    free(out);
}
END_TEST

/* Reentrancy as the issue states it: two threads train on separate buffers at the same time
 * and get exactly what one thread gets alone. Each thread takes a different batch, so a step
 * that kept anything outside its arguments (a static buffer, a shared scratch area) would mix
 * the two and its losses or gradients would differ from the sequential ones. Linked with
 * `cc app.c mlp.o -lm` and nothing else (threads are in glibc's libc since 2.34). */
static const char *threads_app =
    "#include \"mlp.h\"\n"
    "#include <pthread.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "enum { STEPS = 12 };\n"
    "typedef struct { const void *p; const void *in[2]; void *g, *ws; float *out; float loss[STEPS]; void *gsum; } job;\n"
    "static void fill(float *x, int *y, unsigned long long s) {\n"
    "  for (int i = 0; i < 128 * 784; i++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; x[i] = (float)(s >> 40) / 16777216.0f; }\n"
    "  for (int b = 0; b < 128; b++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; y[b] = (int)(s >> 60) % 10; }\n"
    "}\n"
    "static void *run(void *arg) {\n"
    "  job *j = arg; void *outs[1] = {j->out};\n"
    "  for (int k = 0; k < STEPS; k++) {\n"
    "    j->loss[k] = mlp_train_step(j->p, j->g, j->in, j->ws);\n"
    "    for (int t = 0; t < MLP_NUM_PARAMS; t++) {  /* every step's gradients count, not only the last; */\n"
    "      const mg_tensor_desc *d = &mlp_params_desc[t];  /* the blob's padding is nobody's */\n"
    "      float *a = (float *)((char *)j->gsum + d->offset), *b = (float *)((char *)j->g + d->offset);\n"
    "      for (size_t i = 0; i < d->bytes / 4; i++) a[i] += b[i] * (float)(k + 1);\n"
    "    }\n"
    "    mlp_forward(j->p, j->in, outs, j->ws);\n"
    "  }\n"
    "  return NULL;\n"
    "}\n"
    "static void init(job *j, const void *p, const float *x, const int *y) {\n"
    "  j->p = p; j->in[0] = x; j->in[1] = y;\n"
    "  j->g = malloc(MLP_PARAM_BYTES); j->ws = malloc(MLP_WORKSPACE_BYTES); j->out = malloc(128 * 10 * 4);\n"
    "  j->gsum = calloc(1, MLP_PARAM_BYTES);\n"
    "}\n"
    "static int same(const job *a, const job *b) {\n"
    "  return !memcmp(a->loss, b->loss, sizeof a->loss) && !memcmp(a->gsum, b->gsum, MLP_PARAM_BYTES) &&\n"
    "         !memcmp(a->out, b->out, 128 * 10 * 4);\n"
    "}\n"
    "int main(void) {\n"
    "  float *x[2]; int *y[2];\n"
    "  for (int t = 0; t < 2; t++) { x[t] = malloc(128 * 784 * 4); y[t] = malloc(128 * 4); fill(x[t], y[t], 7 + 1000 * t); }\n"
    "  void *p = malloc(MLP_PARAM_BYTES); mlp_init_params(p, 3);\n"
    "  job seq[2], par[2];\n"
    "  for (int t = 0; t < 2; t++) { init(&seq[t], p, x[t], y[t]); init(&par[t], p, x[t], y[t]); run(&seq[t]); }\n"
    "  if (!memcmp(seq[0].loss, seq[1].loss, sizeof seq[0].loss)) { puts(\"the two batches give the same losses\"); return 3; }\n"
    "  for (int round = 0; round < 5; round++) {\n"
    "    pthread_t th[2];\n"
    "    for (int t = 0; t < 2; t++) { memset(par[t].gsum, 0, MLP_PARAM_BYTES); memset(par[t].ws, 0xff, MLP_WORKSPACE_BYTES);\n"
    "      if (pthread_create(&th[t], NULL, run, &par[t])) { puts(\"pthread_create failed\"); return 4; } }\n"
    "    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);\n"
    "    for (int t = 0; t < 2; t++)\n"
    "      if (!same(&seq[t], &par[t])) { printf(\"thread %d, round %d: results differ from the sequential run\\n\", t, round); return 5; }\n"
    "  }\n"
    "  printf(\"identical %.6f %.6f\\n\", seq[0].loss[STEPS - 1], seq[1].loss[STEPS - 1]);\n"
    "  return 0;\n"
    "}\n";

START_TEST(two_threads_give_the_sequential_results)
{
    char *out = run_mlp_app(threads_app);
    ck_assert_msg(strncmp(out, "identical ", 10) == 0, "output: %s", out);
    free(out);
}
END_TEST

START_TEST(two_models_in_one_program)
{
    char path[4200], *out = NULL;
    snprintf(path, sizeof path, "%s/a.mg", dir);
    tu_write(path, "model a\ninput x: f32[2,3]\nparam w: f32[3,1] = ones\nloss = sum(x @ w)\noutput loss\nminimize loss\n");
    snprintf(path, sizeof path, "%s/b.mg", dir);
    tu_write(path, "model b\ninput x: f32[2,3]\nparam w: f32[3,1] = ones\nloss = mean(x @ w)\noutput loss\nminimize loss\n");
    snprintf(path, sizeof path, "%s/app.c", dir);
    tu_write(path,
             "#include \"a.h\"\n#include \"b.h\"\n#include <stdio.h>\n#include <stdlib.h>\n"
             "int main(void) {\n"
             "  float x[6] = {1, 2, 3, 4, 5, 6}; const void *in[1] = {x};\n"
             "  float pa[A_PARAM_BYTES / 4], ga[A_PARAM_BYTES / 4], pb[B_PARAM_BYTES / 4], gb[B_PARAM_BYTES / 4];\n"
             "  void *wa = malloc(A_WORKSPACE_BYTES + 1), *wb = malloc(B_WORKSPACE_BYTES + 1);\n"
             "  a_init_params(pa, 0); b_init_params(pb, 0);\n"
             "  float la = a_train_step(pa, ga, in, wa), lb = b_train_step(pb, gb, in, wb);\n"
             "  printf(\"%g %g %g %g\\n\", la, lb, ga[0], gb[0]);\n"
             "  return 0;\n}\n");
    int rc = sh(&out, "cd '%s' && '%s' compile a.mg -o a.o --header a.h && '%s' compile b.mg -o b.o --header b.h && "
                      "cc app.c a.o b.o -lm -o app && ./app", dir, MG_MEMGRAD, MG_MEMGRAD);
    ck_assert_msg(rc == 0, "status %d:\n%s", rc, out);
    /* x @ ones = [6, 15]: sum 21, mean 10.5; d sum / d w0 = 1 + 4 = 5, d mean / d w0 = 5 / 2 */
    ck_assert_msg(strstr(out, "21 10.5 5 2.5") != NULL, "unexpected output: %s", out);
    free(out);
}
END_TEST

/* compile --name: one model compiled at two budgets, as mlp_big (store-all) and mlp_small (25%,
 * recomputing and in micro-batches), links into one program (the object's symbols and the
 * header's macros and guard all take the name; both were mlp_*, a duplicate definition). The
 * plans differ, the results do not: gradients are bit-identical across budgets. */
START_TEST(one_model_at_two_budgets_by_name)
{
    char path[4200], *out = NULL;
    snprintf(path, sizeof path, "%s/app.c", dir);
    tu_write(path,
             "#include \"big.h\"\n#include \"small.h\"\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
             "#if !defined(MG_MODEL_mlp_big_H) || !defined(MG_MODEL_mlp_small_H)\n"
             "#error the headers are not named apart\n#endif\n"
             "int main(void) {\n"
             "  if (MLP_SMALL_WORKSPACE_BYTES >= MLP_BIG_WORKSPACE_BYTES) { puts(\"one plan\"); return 3; }\n"
             "  if (MLP_BIG_PARAM_BYTES != MLP_SMALL_PARAM_BYTES || MLP_BIG_MODEL_HASH != MLP_SMALL_MODEL_HASH) return 6;\n"
             "  float *x = malloc(128 * 784 * 4); int *y = malloc(128 * 4); const void *in[2] = {x, y};\n"
             "  unsigned long long s = 5;\n"
             "  for (int i = 0; i < 128 * 784; i++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; x[i] = (float)(s >> 40) / 16777216.0f; }\n"
             "  for (int b = 0; b < 128; b++) y[b] = b % 10;\n"
             "  void *p = malloc(MLP_BIG_PARAM_BYTES), *p2 = malloc(MLP_SMALL_PARAM_BYTES);\n"
             "  void *gb = malloc(MLP_BIG_PARAM_BYTES), *gs = malloc(MLP_SMALL_PARAM_BYTES);\n"
             "  mlp_big_init_params(p, 7); mlp_small_init_params(p2, 7);\n"
             "  if (memcmp(p, p2, MLP_BIG_PARAM_BYTES)) { puts(\"init differs\"); return 4; }\n"
             "  float lb = mlp_big_train_step(p, gb, in, malloc(MLP_BIG_WORKSPACE_BYTES));\n"
             "  float ls = mlp_small_train_step(p, gs, in, malloc(MLP_SMALL_WORKSPACE_BYTES));\n"
             "  if (lb != ls || memcmp(gb, gs, MLP_BIG_PARAM_BYTES)) { printf(\"differ %.9g %.9g\\n\", lb, ls); return 5; }\n"
             "  printf(\"equal %.6f in %zu and %zu bytes\\n\", lb, (size_t)MLP_BIG_WORKSPACE_BYTES, (size_t)MLP_SMALL_WORKSPACE_BYTES);\n"
             "  return 0;\n}\n");
    int rc = sh(&out, "cd '%s' && M='%s' && \"$M\" compile '%s/examples/mlp.mg' --solver store-all --name mlp_big -o big.o "
                      "--header big.h && \"$M\" compile '%s/examples/mlp.mg' --budget 25%% --name mlp_small -o small.o "
                      "--header small.h && cc app.c big.o small.o -lm -o app && ./app",
                dir, MG_MEMGRAD, MG_SOURCE_DIR, MG_SOURCE_DIR);
    ck_assert_msg(rc == 0 && !strncmp(out, "equal ", 6), "status %d:\n%s", rc, out);
    free(out);
}
END_TEST

/* The apps' buffer that ends at a PROT_NONE page: a kernel reading or writing past what the
 * header says it needs faults. (C source, for the apps the tests write.) */
#define GUARDED_C                                                                                  \
    "static unsigned char *guarded(size_t n) {  /* n bytes that end at a PROT_NONE page */\n"      \
    "  size_t pg = (size_t)sysconf(_SC_PAGESIZE), span = (n + pg - 1) / pg * pg;\n"                \
    "  unsigned char *m = mmap(NULL, span + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n" \
    "  if (m == MAP_FAILED || mprotect(m + span, pg, PROT_NONE)) exit(9);\n"                       \
    "  return m + span - n;\n"                                                                     \
    "}\n"

/* NAME_FORWARD_WORKSPACE_BYTES: NAME_forward touches only that prefix of the workspace. Checked
 * against the hardware, not a sanitizer (the generated object is not instrumented): the
 * workspace ends exactly where an inaccessible page begins, so a read or write past it faults;
 * the outputs equal those computed in a whole workspace, and the labels are not passed. */
START_TEST(forward_needs_only_its_workspace)
{
    char path[4200], *out = NULL;
    snprintf(path, sizeof path, "%s/app.c", dir);
    tu_write(path,
             "#include \"mlp.h\"\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
             "#include <sys/mman.h>\n#include <unistd.h>\n"
             GUARDED_C
             "int main(void) {\n"
             "  if (!(MLP_FORWARD_WORKSPACE_BYTES < MLP_WORKSPACE_BYTES)) { puts(\"no smaller prefix\"); return 3; }\n"
             "  float *x = malloc(128 * 784 * 4); const void *in[2] = {x, NULL};\n"
             "  unsigned long long s = 9;\n"
             "  for (int i = 0; i < 128 * 784; i++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; x[i] = (float)(s >> 40) / 16777216.0f; }\n"
             "  void *p = malloc(MLP_PARAM_BYTES); mlp_init_params(p, 2);\n"
             "  float *a = malloc(128 * 10 * 4), *b = malloc(128 * 10 * 4); void *oa[1] = {a}, *ob[1] = {b};\n"
             "  mlp_forward(p, in, oa, malloc(MLP_WORKSPACE_BYTES));\n"
             "  unsigned char *ws = guarded(MLP_FORWARD_WORKSPACE_BYTES);\n"
             "  memset(ws, 0xff, MLP_FORWARD_WORKSPACE_BYTES);\n"
             "  mlp_forward(p, in, ob, ws);\n"
             "  if (memcmp(a, b, 128 * 10 * 4)) { puts(\"outputs differ\"); return 4; }\n"
             "  printf(\"prefix %zu of %zu bytes\\n\", (size_t)MLP_FORWARD_WORKSPACE_BYTES, (size_t)MLP_WORKSPACE_BYTES);\n"
             "  return 0;\n}\n");
    int rc = sh(&out, "cd '%s' && '%s' compile '%s/examples/mlp.mg' --budget 50%% -o mlp.o --header mlp.h && "
                      "cc app.c mlp.o -lm -o app && ./app", dir, MG_MEMGRAD, MG_SOURCE_DIR);
    ck_assert_msg(rc == 0 && !strncmp(out, "prefix ", 7), "status %d:\n%s", rc, out);
    free(out);
}
END_TEST

/* A figure of a plan's JSON: obj.key (obj NULL: the top level); fails the test where it has none. */
static double plan_figure(const cJSON *plan, const char *obj, const char *key)
{
    const cJSON *o = obj ? cJSON_GetObjectItemCaseSensitive(plan, obj) : plan;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "no number %s%s%s in the plan's JSON", obj ? obj : "", obj ? "." : "", key);
    return v->valuedouble;
}

/* A forward pass whose own plan recomputes, compiled as `plan` plans it (planner.c,
 * mg_plan_program). tests/data/forward_recompute_floor.mg at 46,000 bytes: the training step
 * runs every op once there (so compile leaves its minimum search out) and the forward pass must
 * recompute (its store-all needs 87,616 bytes), where mg_plan_program solves both again with
 * their whole searches. What a user checks:
 *  - compile's plans are plan's: the object's plan hash (both functions, step by step and buffer
 *    by buffer) is that of an object compiled from plan's own plans, which compile takes from the
 *    plan cache, and the header's figures are the JSON's (without the solve again, compile
 *    emitted a forward pass of 45,056 bytes executing 901,120 FLOPs, plan 40,960 and 847,872);
 *  - the case is still the one above: the step recomputes nothing, the forward pass recomputes,
 *    whole (not in micro-batches), and the store-all workspace percentages would refer to is the
 *    forward pass's (the larger of the two functions');
 *  - both plans verify (--verify of plan and compile);
 *  - the forward pass's output and the step's loss and gradients are bit-identical to those of
 *    the store-all build, the forward pass run in a workspace of exactly its
 *    FORWARD_WORKSPACE_BYTES that ends at an inaccessible page and is filled with NaNs. */
START_TEST(forward_recomputes_as_plan_plans)
{
    const char *model = MG_SOURCE_DIR "/tests/data/forward_recompute_floor.mg";
    const long long budget = 46000;
    char *out = NULL;
    /* plan's plans, kept in a cache of the test's own */
    int rc = sh(&out, "cd '%s' && '%s' plan '%s' --budget %lld --format json --verify --cache-dir cache > plan.json", dir,
                MG_MEMGRAD, model, budget);
    ck_assert_msg(rc == 0 && strstr(out, "plan verified"), "plan exited %d:\n%s", rc, out);
    free(out);
    char *text = tu_read(tu_path(dir, "plan.json"));
    ck_assert(text != NULL);
    cJSON *plan = cJSON_Parse(text);
    ck_assert_msg(plan != NULL, "plan's JSON does not parse:\n%.400s", text);
    free(text);
    double fwd_once = plan_figure(plan, "forward", "flops_once"), fwd_exec = plan_figure(plan, "forward", "flops_executed");
    double step_once = plan_figure(plan, "train", "flops_once"), step_exec = plan_figure(plan, "train", "flops_executed");
    long long ws = (long long)plan_figure(plan, NULL, "workspace_bytes"),
              fwd_ws = (long long)plan_figure(plan, "forward", "workspace_bytes"),
              step_peak = (long long)plan_figure(plan, "train", "peak_live_bytes"),
              store_all = (long long)plan_figure(plan, NULL, "store_all_workspace_bytes");
    ck_assert_msg(plan_figure(plan, NULL, "micro_batches") == 1 && plan_figure(plan, NULL, "budget_bytes") == budget &&
                      step_exec == step_once && fwd_exec > fwd_once && fwd_ws <= budget && ws <= budget,
                  "no longer the case under test: %g parts; the step executes %.0f FLOPs of %.0f once, the forward "
                  "pass %.0f of %.0f in %lld bytes (budget %lld)",
                  plan_figure(plan, NULL, "micro_batches"), step_exec, step_once, fwd_exec, fwd_once, fwd_ws, budget);
    cJSON_Delete(plan);
    /* the text report says the forward pass recomputes (its FLOPs line is the step's) */
    rc = sh(&out, "'%s' plan '%s' --budget %lld --bytes --no-cache", MG_MEMGRAD, model, budget);
    char want[160];
    snprintf(want, sizeof want, "forward workspace   %lld bytes, recomputing: %.0f executed, %.0f once (+", fwd_ws, fwd_exec,
             fwd_once);
    ck_assert_msg(rc == 0 && out && strstr(out, want),
                  "plan's text report does not say the forward pass recomputes (want \"%s\"):\n%s", want, out);
    free(out);

    /* compile from plan's plans (the cache holds them: it plans nothing and adds no entry), then
     * compile planning for itself, then the store-all build the results are compared with */
    rc = sh(&out, "cd '%s' && M='%s' && \"$M\" compile '%s' --budget %lld --cache-dir cache -O0 --name fwd_floor_p -o p.o "
                  "--header p.h && \"$M\" cache --cache-dir cache",
            dir, MG_MEMGRAD, model, budget);
    int entries = -1;
    const char *e = out ? strstr(out, "entries") : NULL;
    ck_assert_msg(rc == 0 && e && sscanf(e, "entries %d", &entries) == 1 && entries == 1,
                  "compile from the plan cache exited %d (%d entries):\n%s", rc, entries, out);
    free(out);
    rc = sh(&out, "cd '%s' && '%s' compile '%s' --budget %lld --no-cache --verify --name fwd_floor_b -o b.o --header b.h", dir,
            MG_MEMGRAD, model, budget);
    ck_assert_msg(rc == 0 && strstr(out, "plan verified"), "compile exited %d:\n%s", rc, out);
    free(out);
    rc = sh(&out, "cd '%s' && '%s' compile '%s' --solver store-all --no-cache --name fwd_floor_all -o all.o --header all.h",
            dir, MG_MEMGRAD, model);
    ck_assert_msg(rc == 0, "compile --solver store-all exited %d:\n%s", rc, out);
    free(out);

    char *hp = tu_read(tu_path(dir, "p.h")), *hb = tu_read(tu_path(dir, "b.h")), *ha = tu_read(tu_path(dir, "all.h"));
    ck_assert(hp && hb && ha);
    ck_assert_msg(tu_header_hash(hb, "_PLAN_HASH") == tu_header_hash(hp, "_PLAN_HASH"),
                  "compile's plans are not plan's: plan hash 0x%016llx, from plan's plans 0x%016llx; workspace %lld, "
                  "forward %lld bytes, plan's %lld and %lld",
                  tu_header_hash(hb, "_PLAN_HASH"), tu_header_hash(hp, "_PLAN_HASH"), tu_header_figure(hb, "FWD_FLOOR_B_WORKSPACE_BYTES"),
                  tu_header_figure(hb, "FWD_FLOOR_B_FORWARD_WORKSPACE_BYTES"), ws, fwd_ws);
    const char *fig = strstr(hb, "peak live bytes ");
    long long peak = -1;
    double exec = -1, once = -1;
    ck_assert_msg(fig && sscanf(fig, "peak live bytes %lld; FLOPs executed %lf, every op once %lf", &peak, &exec, &once) == 3,
                  "no figures of the training step's plan in the header");
    ck_assert_msg(tu_header_figure(hb, "FWD_FLOOR_B_WORKSPACE_BYTES") == ws &&
                      tu_header_figure(hb, "FWD_FLOOR_B_FORWARD_WORKSPACE_BYTES") == fwd_ws && peak == step_peak &&
                      exec == step_exec && once == step_once,
                  "the header's figures are not plan's: workspace %lld, forward %lld, the step's peak %lld, FLOPs %.0f of "
                  "%.0f; plan %lld, %lld, %lld, %.0f of %.0f",
                  tu_header_figure(hb, "FWD_FLOOR_B_WORKSPACE_BYTES"), tu_header_figure(hb, "FWD_FLOOR_B_FORWARD_WORKSPACE_BYTES"),
                  peak, exec, once, ws, fwd_ws, step_peak, step_exec, step_once);
    /* the forward pass's store-all is the larger: the one percentages refer to */
    ck_assert_msg(tu_header_figure(ha, "FWD_FLOOR_ALL_FORWARD_WORKSPACE_BYTES") == store_all &&
                      tu_header_figure(ha, "FWD_FLOOR_ALL_WORKSPACE_BYTES") == store_all && ws < store_all,
                  "store-all: workspace %lld, forward %lld; plan's store-all %lld",
                  tu_header_figure(ha, "FWD_FLOOR_ALL_WORKSPACE_BYTES"), tu_header_figure(ha, "FWD_FLOOR_ALL_FORWARD_WORKSPACE_BYTES"),
                  store_all);
    free(hp);
    free(hb);
    free(ha);

    char path[4200];
    snprintf(path, sizeof path, "%s/app.c", dir);
    tu_write(path,
             "#include \"all.h\"\n#include \"b.h\"\n#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
             "#include <string.h>\n#include <sys/mman.h>\n#include <unistd.h>\n"
             "enum { NX = 2 * 4 * 8 * 8, NE = 5120, NK = 16 * 16, NH = 2 * 4 * 16 * 16 };\n"
             "static unsigned long long s = 11;\n"
             "static float rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (float)(s >> 40) / 16777216.0f; }\n"
             GUARDED_C
             "int main(void) {\n"
             "  if (FWD_FLOOR_B_NUM_INPUTS != 4 || FWD_FLOOR_B_NUM_OUTPUTS != 1 || FWD_FLOOR_B_PARAM_BYTES != FWD_FLOOR_ALL_PARAM_BYTES)\n"
             "    return 3;\n"
             "  float *x = malloc(NX * 4), *x2 = malloc(NE * 4), *t2 = malloc(NE * 4), *k = malloc(NK * 4);\n"
             "  for (int i = 0; i < NX; i++) x[i] = 0.5f * rnd();\n"
             "  for (int i = 0; i < NE; i++) { x2[i] = rnd(); t2[i] = rnd(); }\n"
             "  for (int i = 0; i < NK; i++) k[i] = 0.5f * (rnd() - 0.5f);\n"
             "  const void *in[4] = {x, x2, t2, k}, *fin[4] = {x, NULL, NULL, k};  /* forward reads neither x2 nor t2 */\n"
             "  void *pa = malloc(FWD_FLOOR_ALL_PARAM_BYTES), *pb = malloc(FWD_FLOOR_B_PARAM_BYTES);\n"
             "  fwd_floor_all_init_params(pa, 5); fwd_floor_b_init_params(pb, 5);\n"
             "  if (memcmp(pa, pb, FWD_FLOOR_B_PARAM_BYTES)) { puts(\"init differs\"); return 4; }\n"
             "  unsigned char *wa = malloc(FWD_FLOOR_ALL_WORKSPACE_BYTES), *wb = malloc(FWD_FLOOR_B_WORKSPACE_BYTES);\n"
             "  unsigned char *wf = guarded(FWD_FLOOR_B_FORWARD_WORKSPACE_BYTES);\n"
             "  memset(wa, 0xff, FWD_FLOOR_ALL_WORKSPACE_BYTES); memset(wb, 0xff, FWD_FLOOR_B_WORKSPACE_BYTES);\n"
             "  memset(wf, 0xff, FWD_FLOOR_B_FORWARD_WORKSPACE_BYTES);  /* NaNs: nothing may be read before it is written */\n"
             "  float *ha = malloc(NH * 4), *hb = malloc(NH * 4); void *oa[1] = {ha}, *ob[1] = {hb};\n"
             "  fwd_floor_all_forward(pa, fin, oa, wa);\n"
             "  fwd_floor_b_forward(pb, fin, ob, wf);\n"
             "  int finite = 0, nonzero = 0;\n"
             "  for (int i = 0; i < NH; i++) { finite += isfinite(ha[i]) != 0; nonzero += ha[i] != 0; }\n"
             "  if (finite != NH || nonzero < NH / 2) { printf(\"store-all's heat: %d finite, %d nonzero\\n\", finite, nonzero); return 5; }\n"
             "  for (int i = 0; i < NH; i++)\n"
             "    if (memcmp(&ha[i], &hb[i], 4)) { printf(\"heat[%d] differs: %.9g against store-all's %.9g\\n\", i, hb[i], ha[i]); return 6; }\n"
             "  void *ga = malloc(FWD_FLOOR_ALL_PARAM_BYTES), *gb = malloc(FWD_FLOOR_B_PARAM_BYTES);\n"
             "  float la = fwd_floor_all_train_step(pa, ga, in, wa), lb = fwd_floor_b_train_step(pb, gb, in, wb);\n"
             "  if (!isfinite(la) || la != lb || memcmp(ga, gb, FWD_FLOOR_B_PARAM_BYTES)) {\n"
             "    printf(\"the step differs: loss %.9g against store-all's %.9g\\n\", lb, la); return 7; }\n"
             "  printf(\"identical: heat[0] %.6f, loss %.6f; forward workspace %zu of store-all's %zu bytes\\n\", ha[0], la,\n"
             "         (size_t)FWD_FLOOR_B_FORWARD_WORKSPACE_BYTES, (size_t)FWD_FLOOR_ALL_FORWARD_WORKSPACE_BYTES);\n"
             "  return 0;\n}\n");
    rc = sh(&out, "cd '%s' && cc app.c all.o b.o -lm -o app && ./app", dir);
    ck_assert_msg(rc == 0 && !strncmp(out, "identical: ", 11), "status %d:\n%s", rc, out);
    free(out);
}
END_TEST

START_TEST(budget_below_store_all_is_refused)
{
    char *out = NULL;
    /* (mlp's minimum is 4.5% of store-all, in micro-batches) */
    int rc = sh(&out, "cd '%s' && '%s' compile '%s/examples/mlp.mg' -o m.o --budget 2%%", dir, MG_MEMGRAD, MG_SOURCE_DIR);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(out, "store-all workspace") != NULL, "%s", out);
    free(out);
    rc = sh(&out, "test ! -e '%s/m.o'", dir);
    ck_assert_msg(rc == 0, "a refused compile left an object behind");
    free(out);
    rc = sh(&out, "cd '%s' && '%s' compile '%s/examples/mlp.mg' -o m.o --budget 100%% && test -s m.o", dir, MG_MEMGRAD,
            MG_SOURCE_DIR);
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("e2e");
    TCase *tc = tcase_create("e2e");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, train_linked_with_cc_only);
    tcase_add_test(tc, two_threads_give_the_sequential_results);
    tcase_add_test(tc, two_models_in_one_program);
    tcase_add_test(tc, one_model_at_two_budgets_by_name);
    tcase_add_test(tc, forward_needs_only_its_workspace);
    tcase_add_test(tc, forward_recomputes_as_plan_plans);
    tcase_add_test(tc, budget_below_store_all_is_refused);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
