/* train.c — the Fashion-MNIST demo: trains a model that memgrad compiled ahead of time.
 *
 * Built once per model: MODEL names the generated prefix (mlp → mlp_train_step, MLP_...) and
 * MODEL_HEADER the generated header. The model's first input is the image batch (any shape
 * with 784 values per image), its second the i32 labels, and its first output the logits.
 * Reads the gzip'd IDX files that Debian's dataset-fashion-mnist installs, trains with SGD with
 * momentum from memgrad's runtime library, and prints loss, test accuracy and time per epoch.
 * The learning rate follows a cosine from --lr down to 0 over the whole run (--schedule
 * constant keeps it fixed): with a constant 0.05 the CNN ended its 3 epochs at 89.7–90.3%
 * depending on the seed; the decay settles the last epoch and costs nothing per step.
 *
 *   usage: train [--epochs N] [--optimizer adam|sgd] [--lr X] [--schedule cosine|constant]
 *                [--data DIR] [--save FILE] [--seed S]
 */
#include MODEL_HEADER
#include "memgrad_rt.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(MODEL, CAT(_, name))
#define UP(name) CAT(MODEL_UPPER, CAT(_, name))

typedef struct dataset {
    int n;
    float *images; /* n x 784, scaled to [0, 1] */
    int32_t *labels;
} dataset;

static unsigned char *read_gz(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        int r = gzread(f, buf + n, (unsigned)(cap - n));
        if (r <= 0) break;
        n += (size_t)r;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    gzclose(f);
    *len = n;
    return buf;
}

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

static int load(const char *dir, const char *prefix, dataset *ds)
{
    char pi[1024], pl[1024];
    snprintf(pi, sizeof pi, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    snprintf(pl, sizeof pl, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    size_t ni = 0, nl = 0;
    unsigned char *im = read_gz(pi, &ni), *lb = read_gz(pl, &nl);
    /* what is wrong, and with which file: "cannot read Fashion-MNIST from A and B" covered a
     * missing directory and a damaged file alike */
    const char *bad = NULL, *why = NULL;
    char msg[2200];
    if (!im || !lb) bad = !im ? pi : pl, why = "missing or unreadable (install dataset-fashion-mnist, or give --data DIR)";
    else if (ni < 16 || be32(im) != 2051) bad = pi, why = "not an IDX image file (magic 2051)";
    else if (nl < 8 || be32(lb) != 2049) bad = pl, why = "not an IDX label file (magic 2049)";
    else if (be32(im + 8) != 28 || be32(im + 12) != 28) {
        snprintf(msg, sizeof msg, "its images are %lux%lu, not 28x28", (unsigned long)be32(im + 8),
                 (unsigned long)be32(im + 12));
        bad = pi, why = msg;
    } else if (be32(im + 4) != be32(lb + 4)) {
        snprintf(msg, sizeof msg, "it has %lu images and %s has %lu labels", (unsigned long)be32(im + 4), pl,
                 (unsigned long)be32(lb + 4));
        bad = pi, why = msg;
    } else if (ni < 16 + (size_t)be32(im + 4) * 784 || nl < 8 + (size_t)be32(lb + 4))
        bad = ni < 16 + (size_t)be32(im + 4) * 784 ? pi : pl, why = "truncated: shorter than its header says";
    if (bad) {
        fprintf(stderr, "train: cannot read Fashion-MNIST: %s: %s\n", bad, why);
        free(im);
        free(lb);
        return 0;
    }
    ds->n = (int)be32(im + 4);
    ds->images = malloc((size_t)ds->n * 784 * sizeof(float));
    ds->labels = malloc((size_t)ds->n * sizeof(int32_t));
    for (size_t i = 0; i < (size_t)ds->n * 784; i++) ds->images[i] = im[16 + i] / 255.0f;
    for (int i = 0; i < ds->n; i++) ds->labels[i] = lb[8 + i];
    free(im);
    free(lb);
    return 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A whole number in [lo, hi], a positive finite number, or an unsigned 64-bit one: a value
 * that is none of these is a usage error (atoi's 0 trained 0 epochs, atof's 0 took the default
 * learning rate, both silently). */
static int whole(const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(s, &end, 10);
    return end != s && !*end && !errno && *v >= lo && *v <= hi && s[0] != ' ';
}

static int positive(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end && isfinite(*v) && *v > 0 && strspn(s, "0123456789.eE+-") == strlen(s);
}

static int seed_value(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long u = strtoull(s, &end, 10);
    *v = u;
    return end != s && !*end && !errno && strspn(s, "0123456789") == strlen(s);
}

int main(int argc, char **argv)
{
    int epochs = 3;
    double lr = -1;
    int adam = 0, cosine = 1;
    uint64_t seed = 1;
    const char *dir = "/usr/share/datasets/fashion-mnist", *save = NULL;
    for (int i = 1; i < argc; i++) {
        long v;
        if (i + 1 < argc && !strcmp(argv[i], "--epochs") && whole(argv[i + 1], 1, 1000000, &v)) {
            epochs = (int)v;
            i++;
        } else if (i + 1 < argc && !strcmp(argv[i], "--lr") && positive(argv[i + 1], &lr))
            i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--data")) dir = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--optimizer") && (!strcmp(argv[i + 1], "adam") || !strcmp(argv[i + 1], "sgd")))
            adam = !strcmp(argv[++i], "adam");
        else if (i + 1 < argc && !strcmp(argv[i], "--schedule") && (!strcmp(argv[i + 1], "cosine") || !strcmp(argv[i + 1], "constant")))
            cosine = !strcmp(argv[++i], "cosine");
        else if (i + 1 < argc && !strcmp(argv[i], "--save")) save = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { /* asked for: stdout, exit 0 */
            printf("usage: %s [--epochs N (1 or more)] [--optimizer adam|sgd] [--lr X (positive)] "
                   "[--schedule cosine|constant] [--data DIR] [--save FILE] [--seed S]\n", argv[0]);
            return 0;
        }
        else if (i + 1 < argc && !strcmp(argv[i], "--seed") && seed_value(argv[i + 1], &seed))
            i++;
        else {
            static const char *const valued[] = {"--epochs", "--lr", "--optimizer", "--schedule", "--seed",
                                                 "--data", "--save"};
            size_t k = 0;
            while (k < sizeof valued / sizeof valued[0] && strcmp(argv[i], valued[k])) k++;
            if (k == sizeof valued / sizeof valued[0]) /* (only the usage line was printed) */
                fprintf(stderr, "train: unknown option '%s'\n", argv[i]);
            else if (i + 1 == argc)
                fprintf(stderr, "train: %s needs a value\n", argv[i]);
            else
                fprintf(stderr, "train: bad value '%s' for %s\n", argv[i + 1], argv[i]);
            fprintf(stderr, "usage: %s [--epochs N (1 or more)] [--optimizer adam|sgd] [--lr X (positive)] "
                            "[--schedule cosine|constant] [--data DIR] [--save FILE] [--seed S]\n", argv[0]);
            return 2;
        }
    }
    /* --save's file is written after the last epoch: a directory that is missing or read-only,
     * or a directory named as the file, is found now, not after minutes of training */
    if (save) {
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", save);
        char *slash = strrchr(parent, '/');
        if (!slash) snprintf(parent, sizeof parent, ".");
        else if (slash == parent) parent[1] = 0;
        else *slash = 0;
        struct stat st;
        const char *why = stat(save, &st) == 0 && S_ISDIR(st.st_mode) ? "it is a directory"
                          : stat(parent, &st) != 0 || !S_ISDIR(st.st_mode) ? "its directory does not exist"
                                                                           : NULL;
        if (!why) { /* mg_params_save writes a temporary file there: try one (root passes access()
                     * where the file system still refuses, /proc or a read-only mount) */
            char probe[4200];
            snprintf(probe, sizeof probe, "%s/.train-probe.%ld", parent, (long)getpid());
            int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
            static char msg[4400];
            if (fd < 0) {
                snprintf(msg, sizeof msg, "cannot create a file in '%s': %s", parent, strerror(errno));
                why = msg;
            }
            else {
                close(fd);
                unlink(probe);
            }
        }
        if (why) {
            fprintf(stderr, "train: cannot save to '%s': %s\n", save, why);
            return 1;
        }
    }
    const mg_tensor_desc *xin = &FN(inputs_desc)[0], *yin = &FN(inputs_desc)[1];
    const int B = (int)yin->shape[0];
    if (UP(NUM_INPUTS) != 2 || yin->dtype != MG_I32 || xin->dtype != MG_F32 || xin->bytes != (size_t)B * 784 * 4) {
        fprintf(stderr, "train: the model must take (f32 images [%d x 784 values], i32 labels [%d])\n", B, B);
        return 1;
    }
    const int classes = (int)FN(outputs_desc)[0].shape[1];
    dataset tr, te;
    if (!load(dir, "train", &tr) || !load(dir, "t10k", &te)) return 1;
    /* what the loop below needs of the files: a batch to train on, images to test on, and labels
     * the model has classes for (a label past them made the loss NaN, silently, for the rest of
     * the run; too few images printed "loss -nan  test accuracy -nan%" and exited 0) */
    const dataset *sets[2] = {&tr, &te};
    for (int k = 0; k < 2; k++) {
        const char *what = k ? "t10k" : "train";
        if (sets[k]->n < (k ? 1 : B)) {
            if (k) fprintf(stderr, "train: %s/%s-images-idx3-ubyte.gz has no images to test on\n", dir, what);
            else
                fprintf(stderr, "train: %s/%s-images-idx3-ubyte.gz has %d image%s, fewer than one batch of %d\n", dir,
                        what, sets[k]->n, sets[k]->n == 1 ? "" : "s", B);
            return 1;
        }
        for (int i = 0; i < sets[k]->n; i++)
            if (sets[k]->labels[i] >= classes) {
                fprintf(stderr, "train: %s/%s-labels-idx1-ubyte.gz: label %d of image %d is not one of the model's %d "
                                "classes (0 to %d)\n", dir, what, (int)sets[k]->labels[i], i, classes, classes - 1);
                return 1;
            }
    }

    if (FN(plan_hash) != UP(PLAN_HASH)) { /* a header from another compile: its sizes do not hold */
        fprintf(stderr, "train: the model's header is not the one compiled with its object: build both again\n");
        return 1;
    }
    void *params = calloc(1, UP(PARAM_BYTES)), *grads = calloc(1, UP(PARAM_BYTES));
    void *vel = calloc(1, UP(PARAM_BYTES)), *ws = malloc(UP(WORKSPACE_BYTES) ? UP(WORKSPACE_BYTES) : 1);
    float *xb = malloc((size_t)B * 784 * sizeof(float));
    int32_t *yb = malloc((size_t)B * sizeof(int32_t));
    float *logits = malloc(FN(outputs_desc)[0].bytes);
    int *perm = malloc((size_t)tr.n * sizeof(int));
    FN(init_params)(params, seed);
    if (lr <= 0) lr = adam ? 1e-3 : 0.05;
    mg_sgd_config sgd = {lr, 0.9, 0.0, 0};
    mg_adam_config adam_cfg = mg_adam_defaults(lr);
    void *adam_v = calloc(1, UP(PARAM_BYTES));
    mg_adam_state adam_st = {vel, adam_v, 0};
    const void *inputs[2] = {xb, yb};
    void *outputs[1] = {logits};
    uint64_t rs = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (int i = 0; i < tr.n; i++) perm[i] = i;
    printf("model %s: %d parameter tensors (%.1f KiB), workspace %.1f KiB, batch %d, %s lr %g%s\n", MODEL_NAME,
           UP(NUM_PARAMS), UP(PARAM_BYTES) / 1024.0, UP(WORKSPACE_BYTES) / 1024.0, B, adam ? "adam" : "sgd", lr,
           cosine ? " (cosine decay to 0)" : "");
    const double total_steps = (double)epochs * (double)(tr.n / B);
    for (int ep = 1; ep <= epochs; ep++) {
        for (int i = tr.n - 1; i > 0; i--) {
            int j = (int)(rng_next(&rs) % (uint64_t)(i + 1)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        double t0 = now(), total = 0;
        int steps = tr.n / B;
        for (int s = 0; s < steps; s++) {
            for (int b = 0; b < B; b++) {
                int k = perm[s * B + b];
                memcpy(xb + (size_t)b * 784, tr.images + (size_t)k * 784, 784 * sizeof(float));
                yb[b] = tr.labels[k];
            }
            float loss = FN(train_step)(params, grads, inputs, ws);
            /* a diverged run (too high a learning rate) turns every parameter into NaN within a few
             * steps and would go on to the end printing "loss -nan" and saving them */
            if (!isfinite(loss)) {
                fprintf(stderr, "train: the loss is %s at epoch %d, step %d of %d (learning rate %g): training "
                                "diverged; try a smaller --lr\n", isnan(loss) ? "NaN" : "infinite", ep, s + 1, steps,
                        adam ? adam_cfg.lr : sgd.lr);
                free(params); free(grads); free(vel); free(adam_v); free(ws); free(xb); free(yb); free(logits);
                free(perm); free(tr.images); free(tr.labels); free(te.images); free(te.labels);
                return 1;
            }
            total += loss;
            if (cosine) {
                double t = ((double)(ep - 1) * steps + s) / total_steps;
                sgd.lr = adam_cfg.lr = lr * 0.5 * (1.0 + cos(3.14159265358979323846 * t));
            }
            mg_rt_status st = adam ? mg_adam_step(FN(params_desc), UP(NUM_PARAMS), params, grads, &adam_st, &adam_cfg)
                                   : mg_sgd_step(FN(params_desc), UP(NUM_PARAMS), params, grads, vel, &sgd);
            if (st != MG_RT_OK) { /* a setting the optimizer refuses (the options are checked, so not expected) */
                fprintf(stderr, "train: the %s step refused its settings (learning rate %g): %s\n", adam ? "Adam" : "SGD",
                        adam ? adam_cfg.lr : sgd.lr, mg_rt_status_name(st));
                free(params); free(grads); free(vel); free(adam_v); free(ws); free(xb); free(yb); free(logits);
                free(perm); free(tr.images); free(tr.labels); free(te.images); free(te.labels);
                return 1;
            }
        }
        double train_s = now() - t0;
        int correct = 0;
        for (int s = 0; s < te.n; s += B) {
            int valid = te.n - s < B ? te.n - s : B;
            for (int b = 0; b < B; b++) {
                int k = s + (b < valid ? b : 0);
                memcpy(xb + (size_t)b * 784, te.images + (size_t)k * 784, 784 * sizeof(float));
                yb[b] = te.labels[k];
            }
            FN(forward)(params, inputs, outputs, ws);
            for (int b = 0; b < valid; b++) {
                int best = 0;
                for (int c = 1; c < classes; c++)
                    if (logits[b * classes + c] > logits[b * classes + best]) best = c;
                correct += best == yb[b];
            }
        }
        printf("epoch %d  loss %.4f  test accuracy %.2f%%  %.2f s/epoch\n", ep, total / steps,
               100.0 * correct / te.n, train_s);
        fflush(stdout);
    }
    int rc = 0;
    if (save) {
        char err[512];
        if (mg_params_save(save, UP(MODEL_HASH), params, UP(PARAM_BYTES), err, sizeof err) != MG_RT_OK) {
            fprintf(stderr, "train: %s\n", err);
            rc = 1;
        } else {
            printf("saved parameters to %s\n", save);
        }
    }
    free(params); free(grads); free(vel); free(adam_v); free(ws); free(xb); free(yb); free(logits); free(perm);
    free(tr.images); free(tr.labels); free(te.images); free(te.labels);
    return rc;
}
