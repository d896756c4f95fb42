/* memgrad_rt.h — the optional runtime library for applications that train a memgrad model.
 *
 * A generated module only computes a training step over caller-owned blobs (params, grads,
 * workspace). Everything around that step that every application would otherwise rewrite lives
 * here: checkpointing the params blob to a file that refuses to load into the wrong model or
 * when damaged, and the standard optimizers (SGD with momentum/Nesterov, Adam/AdamW) applied
 * to the blobs through the generated NAME_params_desc table.
 *
 * Library code never prints or exits. Every function that can fail returns a status: the file
 * functions, when err is not NULL and errlen > 0, also write a NUL-terminated message naming the
 * file into err (truncated to fit); the optimizers refuse a configuration they cannot run before
 * touching any blob.
 */
#ifndef MEMGRAD_RT_H
#define MEMGRAD_RT_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* This block is identical in every generated header, so the two headers can be included in
 * either order. Do not change one without the other. */
#ifndef MG_TENSOR_DESC_DEFINED
#define MG_TENSOR_DESC_DEFINED
enum { MG_F32 = 0, MG_F64 = 1, MG_I32 = 2 };
typedef struct mg_tensor_desc {
    const char *name; int dtype; int rank; int64_t shape[8]; size_t offset; size_t bytes;
} mg_tensor_desc;
#endif

/* ---- Parameter files -------------------------------------------------------------------- */

typedef enum {
    MG_RT_OK = 0,
    MG_RT_ERR_IO,        /* the OS refused: cannot open/create/read/write/rename (see err) */
    MG_RT_ERR_FORMAT,    /* not a memgrad parameter file, unsupported version, trailing data */
    MG_RT_ERR_MODEL,     /* the file was saved for a model with a different hash */
    MG_RT_ERR_CHECKSUM,  /* the file is corrupted */
    MG_RT_ERR_TRUNCATED, /* the file is shorter than its header says (including empty files) */
    MG_RT_ERR_SIZE,      /* the file's payload size differs from the caller's buffer size */
    MG_RT_ERR_ARG,       /* invalid argument (NULL path, NULL buffer with nonzero size) */
    MG_RT_ERR_CONFIG     /* an optimizer setting out of its range (a NaN or negative lr, beta1 = 1) */
} mg_rt_status;

/* Writes params[0, bytes) to path, tagged with model_hash (the generated NAME_MODEL_HASH).
 * The data goes to a temporary file in the same directory which is then renamed over path,
 * so a failed save never destroys an existing file and leaves no temporary behind. A symlink
 * keeps pointing where it did (its target is replaced); what is not a regular file (a device
 * such as /dev/null, a FIFO) is written into, never replaced; a directory is an error. */
mg_rt_status mg_params_save(const char *path, uint64_t model_hash, const void *params,
                            size_t bytes, char *err, size_t errlen);

/* Reads a file written by mg_params_save into params[0, bytes). The file must carry
 * model_hash, a payload of exactly `bytes` bytes and a valid checksum. On any error params is
 * left untouched. Needs `bytes` of temporary memory while loading. */
mg_rt_status mg_params_load(const char *path, uint64_t model_hash, void *params, size_t bytes,
                            char *err, size_t errlen);

/* "MG_RT_OK", "MG_RT_ERR_IO", ...; "MG_RT_UNKNOWN" for values outside the enum. */
const char *mg_rt_status_name(mg_rt_status s);

/* ---- Optimizers ------------------------------------------------------------------------- */
/* Each optimizer walks descs[0, n) and updates every MG_F32 or MG_F64 tensor in place; tensors
 * of any other dtype are skipped. A tensor occupies [offset, offset + bytes) of the params blob
 * and the same range of the grads blob and of every state blob. Blobs must be suitably aligned
 * for double (malloc'd memory is) and offsets element-aligned (generated ones are). */

typedef struct { double lr, momentum, weight_decay; int nesterov; } mg_sgd_config;

/* One SGD step, as torch.optim.SGD with dampening 0:
 *   d = g + weight_decay * p
 *   v = momentum * v + d
 *   p -= lr * (nesterov ? d + momentum * v : v)
 * velocity: a zero-initialised blob of the params' size owned by the caller; it may be NULL
 * only when momentum == 0.
 * Returns MG_RT_OK, or, with every blob untouched:
 *   MG_RT_ERR_ARG     cfg NULL, n < 0, or with n > 0: descs, params or grads NULL, or velocity
 *                     NULL with momentum != 0 (with n = 0, a model without params, the blobs
 *                     may be NULL: there is nothing to update);
 *   MG_RT_ERR_CONFIG  lr, momentum or weight_decay not a finite number >= 0 (as torch refuses
 *                     negative ones; NaN and infinity would turn every parameter into NaN), or
 *                     nesterov with momentum 0 (torch refuses it; it would be plain SGD). */
mg_rt_status mg_sgd_step(const mg_tensor_desc *descs, int n, void *params, const void *grads,
                         void *velocity, const mg_sgd_config *cfg);

/* weight_decay is decoupled (AdamW) if nonzero: p *= 1 - lr * weight_decay before the step. */
typedef struct { double lr, beta1, beta2, eps, weight_decay; } mg_adam_config;
/* m, v: zeroed blobs of the params' size owned by the caller; step starts at 0. */
typedef struct { void *m, *v; uint64_t step; } mg_adam_state;

/* One Adam step, as torch.optim.Adam (or AdamW when weight_decay != 0), amsgrad off:
 *   step += 1
 *   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g^2
 *   p -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
 * Returns MG_RT_OK, or, with every blob and st->step untouched:
 *   MG_RT_ERR_ARG     cfg or st NULL, n < 0, or with n > 0: descs, st->m, st->v, params or
 *                     grads NULL (st->step counts the steps with n = 0 too);
 *   MG_RT_ERR_CONFIG  lr or weight_decay not a finite number >= 0, beta1 or beta2 outside
 *                     [0, 1) (beta1 = 1 divides by 1 - beta1^step = 0), eps not a finite number
 *                     > 0 (eps = 0 makes a gradient that is 0 from the start 0/0 = NaN). */
mg_rt_status mg_adam_step(const mg_tensor_desc *descs, int n, void *params, const void *grads,
                          mg_adam_state *st, const mg_adam_config *cfg);

/* beta1 0.9, beta2 0.999, eps 1e-8, weight_decay 0. */
mg_adam_config mg_adam_defaults(double lr);

#ifdef __cplusplus
}
#endif
#endif
