/* test_runtime.c — unit tests for the memgrad runtime library (runtime/memgrad_rt.h).
 *
 * Why this exists: checkpoint files and optimizers fail silently when wrong (a model loads
 * someone else's weights, a damaged file yields garbage, a step is off by a bias correction),
 * so every error path of the file format and the arithmetic of each optimizer is pinned here.
 * All files go to a mkdtemp directory under /tmp that main() removes at the end.
 */
#define _XOPEN_SOURCE 700
#include "memgrad_rt.h"
#include "testutil.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define HASH_A 0x0123456789abcdefULL
#define HASH_B 0xfedcba9876543210ULL
enum { HDR = 32, SUM = 8, P = 64 }; /* header, checksum and default payload sizes */

static char g_root[] = "/tmp/memgrad_rt_test.XXXXXX";

/* ---- helpers ------------------------------------------------------------------------------ */

/* Makes a fresh directory g_root/name for one test and returns its path in out. */
static void case_dir(const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s", g_root, name);
    ck_assert_msg(mkdir(out, 0777) == 0, "mkdir %s: %s", out, strerror(errno));
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
    if (len > 0) ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 3));
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Recomputes the trailing checksum of a file image of total length len. */
static void reseal(unsigned char *file, size_t len)
{
    put_le64(file + len - SUM, XXH64(file, len - SUM, 0));
}

/* Saves a P-byte pattern under HASH_A to dir/name, returning the path in out. */
static void save_default(const char *dir, const char *name, char *out, size_t outlen,
                         unsigned char *payload)
{
    char err[256];
    snprintf(out, outlen, "%s/%s", dir, name);
    fill_pattern(payload, P, 1);
    mg_rt_status s = mg_params_save(out, HASH_A, payload, P, err, sizeof err);
    ck_assert_msg(s == MG_RT_OK, "save: %s: %s", mg_rt_status_name(s), err);
}

/* Loads path into a destination pre-filled with 0xAB and asserts the status and that the
 * destination was not modified. Leaves the message in err. */
static void expect_load_fails(const char *path, uint64_t hash, size_t bytes, mg_rt_status want,
                              char *err, size_t errlen)
{
    unsigned char *dst = malloc(bytes + 1), *ref = malloc(bytes + 1);
    ck_assert_ptr_nonnull(dst);
    ck_assert_ptr_nonnull(ref);
    memset(dst, 0xAB, bytes + 1);
    memset(ref, 0xAB, bytes + 1);
    err[0] = '\0';
    mg_rt_status s = mg_params_load(path, hash, dst, bytes, err, errlen);
    ck_assert_msg(s == want, "load %s: got %s, want %s (%s)", path, mg_rt_status_name(s),
                  mg_rt_status_name(want), err);
    ck_assert_mem_eq(dst, ref, bytes + 1);
    ck_assert_msg(err[0] != '\0', "no error message");
    ck_assert_msg(strstr(err, path) != NULL, "message does not name the file: %s", err);
    free(dst);
    free(ref);
}

/* ---- parameter files ---------------------------------------------------------------------- */

START_TEST(test_roundtrip)
{
    char dir[512], path[600], err[256];
    case_dir("roundtrip", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.params", dir);

    size_t n = 100003; /* odd size, larger than one I/O chunk */
    unsigned char *src = malloc(n), *dst = calloc(1, n);
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(dst);
    fill_pattern(src, n, 7);
    ck_assert_int_eq(mg_params_save(path, HASH_A, src, n, err, sizeof err), MG_RT_OK);
    ck_assert_int_eq(mg_params_load(path, HASH_A, dst, n, err, sizeof err), MG_RT_OK);
    ck_assert_mem_eq(dst, src, n);
    ck_assert_int_eq(count_entries(dir), 1); /* no temporary left behind */
    free(src);
    free(dst);

    /* An empty payload is legal. */
    snprintf(path, sizeof path, "%s/empty.params", dir);
    ck_assert_int_eq(mg_params_save(path, HASH_B, NULL, 0, err, sizeof err), MG_RT_OK);
    ck_assert_int_eq(mg_params_load(path, HASH_B, NULL, 0, err, sizeof err), MG_RT_OK);
    ck_assert_int_eq(count_entries(dir), 2);
}
END_TEST

START_TEST(test_layout)
{
    char dir[512], path[600];
    unsigned char payload[P];
    case_dir("layout", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);

    size_t len;
    unsigned char *f = slurp(path, &len);
    ck_assert_uint_eq(len, HDR + P + SUM);
    ck_assert_mem_eq(f, "MGPARAM1", 8);
    const unsigned char version[4] = { 1, 0, 0, 0 }, zero[4] = { 0, 0, 0, 0 };
    ck_assert_mem_eq(f + 8, version, 4);
    ck_assert_mem_eq(f + 12, zero, 4);
    const unsigned char hash_le[8] = { 0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01 };
    ck_assert_mem_eq(f + 16, hash_le, 8);
    const unsigned char size_le[8] = { P, 0, 0, 0, 0, 0, 0, 0 };
    ck_assert_mem_eq(f + 24, size_le, 8);
    ck_assert_mem_eq(f + HDR, payload, P);
    unsigned char sum_le[8];
    put_le64(sum_le, XXH64(f, HDR + P, 0));
    ck_assert_mem_eq(f + HDR + P, sum_le, 8);
    free(f);
}
END_TEST

START_TEST(test_model_mismatch)
{
    char dir[512], path[600], err[512];
    unsigned char payload[P];
    case_dir("model", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);
    expect_load_fails(path, HASH_B, P, MG_RT_ERR_MODEL, err, sizeof err);
    ck_assert_msg(strstr(err, "0x0123456789abcdef") != NULL, "file hash missing: %s", err);
    ck_assert_msg(strstr(err, "0xfedcba9876543210") != NULL, "expected hash missing: %s", err);

    /* Leading zeros are printed: 0x%016llx. */
    snprintf(path, sizeof path, "%s/small.params", dir);
    ck_assert_int_eq(mg_params_save(path, 0x2aULL, payload, P, err, sizeof err), MG_RT_OK);
    expect_load_fails(path, 0x1ULL, P, MG_RT_ERR_MODEL, err, sizeof err);
    ck_assert_msg(strstr(err, "0x000000000000002a") != NULL, "%s", err);
    ck_assert_msg(strstr(err, "0x0000000000000001") != NULL, "%s", err);
}
END_TEST

/* Flips one byte at off in a pristine copy of the file and expects `want`. */
static void corrupt_and_expect(const char *path, const unsigned char *pristine, size_t len,
                               size_t off, unsigned char mask, mg_rt_status want)
{
    char err[512];
    unsigned char *f = malloc(len);
    ck_assert_ptr_nonnull(f);
    memcpy(f, pristine, len);
    f[off] ^= mask;
    spit(path, f, len);
    expect_load_fails(path, HASH_A, P, want, err, sizeof err);
    if (want == MG_RT_ERR_CHECKSUM)
        ck_assert_msg(strstr(err, "corrupted") != NULL, "offset %zu: %s", off, err);
    free(f);
}

START_TEST(test_checksum_every_payload_byte)
{
    char dir[512], path[600];
    unsigned char payload[P];
    case_dir("checksum", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);
    size_t len;
    unsigned char *orig = slurp(path, &len);

    for (size_t off = HDR; off < HDR + P; off++) {
        corrupt_and_expect(path, orig, len, off, 0xFF, MG_RT_ERR_CHECKSUM);
        corrupt_and_expect(path, orig, len, off, 0x01, MG_RT_ERR_CHECKSUM);
    }
    /* The checksum itself, the model hash field (corruption, not a model mismatch) and the
     * reserved field are all covered by the checksum. */
    for (size_t off = HDR + P; off < len; off++)
        corrupt_and_expect(path, orig, len, off, 0x10, MG_RT_ERR_CHECKSUM);
    for (size_t off = 12; off < 24; off++)
        corrupt_and_expect(path, orig, len, off, 0x80, MG_RT_ERR_CHECKSUM);
    free(orig);
}
END_TEST

START_TEST(test_corrupt_size_field)
{
    char dir[512], path[600], err[512];
    unsigned char payload[P];
    case_dir("sizefield", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);
    size_t len;
    unsigned char *f = slurp(path, &len);

    f[24] = P - 1; /* declares one byte less: checksum read one byte early, one byte extra */
    spit(path, f, len);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_CHECKSUM, err, sizeof err);

    f[24] = P;
    f[31] = 0x80; /* declares ~2^63 bytes */
    spit(path, f, len);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_TRUNCATED, err, sizeof err);

    memset(f + 24, 0xFF, 8); /* declares 2^64-1 bytes: cannot exist */
    spit(path, f, len);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_FORMAT, err, sizeof err);
    free(f);
}
END_TEST

START_TEST(test_truncated)
{
    char dir[512], path[600], cut[600], err[512], want[64];
    unsigned char payload[P];
    case_dir("truncated", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);
    snprintf(cut, sizeof cut, "%s/cut.params", dir);
    size_t len;
    unsigned char *f = slurp(path, &len);

    /* empty, mid-magic, mid-header, header only, mid-payload, missing checksum, half a
     * checksum, one byte short */
    const size_t lengths[] = { 0, 1, 4, 20, HDR - 1, HDR, HDR + P / 2, HDR + P, HDR + P + 4,
                               HDR + P + SUM - 1 };
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        spit(cut, f, lengths[i]);
        expect_load_fails(cut, HASH_A, P, MG_RT_ERR_TRUNCATED, err, sizeof err);
        ck_assert_msg(strstr(err, "truncated") != NULL, "%s", err);
        /* a file cut after its first byte "has 1 byte" (it said "1 bytes"; review18) */
        snprintf(want, sizeof want, "has %zu %s,", lengths[i], lengths[i] == 1 ? "byte" : "bytes");
        ck_assert_msg(strstr(err, want) != NULL, "len %zu: %s", lengths[i], err);
        if (lengths[i] >= HDR) {
            snprintf(want, sizeof want, "should have %d", HDR + P + SUM);
            ck_assert_msg(strstr(err, want) != NULL, "len %zu: %s", lengths[i], err);
        }
    }
    free(f);
}
END_TEST

START_TEST(test_bad_magic)
{
    char dir[512], path[600], err[512];
    unsigned char payload[P];
    case_dir("magic", dir, sizeof dir);

    snprintf(path, sizeof path, "%s/text.txt", dir);
    const char text[] = "this is a text file and certainly not a parameter file\n";
    spit(path, text, sizeof text - 1);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "not a memgrad parameter file") != NULL, "%s", err);

    spit(path, "hi", 2); /* short and not a prefix of the magic: FORMAT, not TRUNCATED */
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_FORMAT, err, sizeof err);

    save_default(dir, "m.params", path, sizeof path, payload);
    size_t len;
    unsigned char *f = slurp(path, &len);
    f[7] = '2'; /* "MGPARAM2" */
    spit(path, f, len);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_FORMAT, err, sizeof err);
    free(f);
}
END_TEST

START_TEST(test_unsupported_version)
{
    char dir[512], path[600], err[512];
    unsigned char payload[P];
    case_dir("version", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);
    size_t len;
    unsigned char *f = slurp(path, &len);
    f[8] = 2;
    reseal(f, len);
    spit(path, f, len);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "unsupported format version 2") != NULL, "%s", err);
    free(f);
}
END_TEST

START_TEST(test_reserved_nonzero)
{
    char dir[512], path[600], err[512];
    unsigned char payload[P];
    case_dir("reserved", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);
    size_t len;
    unsigned char *f = slurp(path, &len);
    f[12] = 1;
    reseal(f, len); /* a well-formed file that sets the reserved field */
    spit(path, f, len);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "reserved") != NULL, "%s", err);
    free(f);
}
END_TEST

START_TEST(test_trailing_garbage)
{
    char dir[512], path[600], err[512];
    unsigned char payload[P];
    case_dir("trailing", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);
    size_t len;
    unsigned char *f = slurp(path, &len);
    unsigned char *g = malloc(len + 3);
    ck_assert_ptr_nonnull(g);
    memcpy(g, f, len);
    memcpy(g + len, "xyz", 3);
    spit(path, g, len + 3);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_FORMAT, err, sizeof err);
    ck_assert_msg(strstr(err, "trailing garbage") != NULL, "%s", err);
    ck_assert_msg(strstr(err, "has 107 bytes") != NULL, "%s", err);
    free(g);
    free(f);
}
END_TEST

START_TEST(test_nonexistent)
{
    char dir[512], path[600], err[512];
    case_dir("nonexistent", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/missing.params", dir);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_IO, err, sizeof err);
    ck_assert_msg(strstr(err, strerror(ENOENT)) != NULL, "%s", err);

    /* A directory opens but cannot be read. */
    expect_load_fails(dir, HASH_A, P, MG_RT_ERR_IO, err, sizeof err);
}
END_TEST

START_TEST(test_wrong_size)
{
    char dir[512], path[600], err[512];
    unsigned char payload[P];
    case_dir("size", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);
    expect_load_fails(path, HASH_A, P - 4, MG_RT_ERR_SIZE, err, sizeof err);
    ck_assert_msg(strstr(err, "64-byte payload") != NULL, "%s", err);
    ck_assert_msg(strstr(err, "60 bytes") != NULL, "%s", err);
    expect_load_fails(path, HASH_A, P + 4, MG_RT_ERR_SIZE, err, sizeof err);
    expect_load_fails(path, HASH_A, 0, MG_RT_ERR_SIZE, err, sizeof err);
    expect_load_fails(path, HASH_A, 1, MG_RT_ERR_SIZE, err, sizeof err);
    ck_assert_msg(strstr(err, "the destination is 1 byte") && !strstr(err, "1 bytes"), "%s", err);
    /* A model mismatch is the more useful report when both differ. */
    expect_load_fails(path, HASH_B, P + 4, MG_RT_ERR_MODEL, err, sizeof err);
}
END_TEST

START_TEST(test_save_into_missing_dir)
{
    char dir[512], path[700], sub[600], err[512];
    unsigned char payload[P];
    fill_pattern(payload, P, 3);
    case_dir("missingdir", dir, sizeof dir);
    snprintf(sub, sizeof sub, "%s/no/such", dir);
    snprintf(path, sizeof path, "%s/m.params", sub);
    err[0] = '\0';
    mg_rt_status s = mg_params_save(path, HASH_A, payload, P, err, sizeof err);
    ck_assert_int_eq(s, MG_RT_ERR_IO);
    ck_assert_msg(strstr(err, path) != NULL, "%s", err);
    ck_assert_msg(strstr(err, strerror(ENOENT)) != NULL, "%s", err);
    ck_assert_int_eq(count_entries(dir), 0);
}
END_TEST

START_TEST(test_save_rename_failure_cleans_up)
{
    /* The target is a non-empty directory: the temporary is written, the rename fails, and the
     * temporary must be removed while the target stays as it was. */
    char dir[512], target[600], inside[700], err[512];
    unsigned char payload[P];
    fill_pattern(payload, P, 4);
    case_dir("renamefail", dir, sizeof dir);
    snprintf(target, sizeof target, "%s/target", dir);
    ck_assert_int_eq(mkdir(target, 0777), 0);
    snprintf(inside, sizeof inside, "%s/keep", target);
    spit(inside, "x", 1);

    mg_rt_status s = mg_params_save(target, HASH_A, payload, P, err, sizeof err);
    ck_assert_int_eq(s, MG_RT_ERR_IO);
    ck_assert_msg(strstr(err, target) != NULL, "%s", err);
    ck_assert_int_eq(count_entries(dir), 1);
    ck_assert_int_eq(count_entries(target), 1);
}
END_TEST

START_TEST(test_save_replaces_existing)
{
    char dir[512], path[600], err[512];
    unsigned char a[P], b[P + 16], out[P + 16];
    case_dir("replace", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, a);
    fill_pattern(b, sizeof b, 9);
    ck_assert_int_eq(mg_params_save(path, HASH_B, b, sizeof b, err, sizeof err), MG_RT_OK);
    ck_assert_int_eq(count_entries(dir), 1);
    ck_assert_int_eq(mg_params_load(path, HASH_B, out, sizeof out, err, sizeof err), MG_RT_OK);
    ck_assert_mem_eq(out, b, sizeof b);
    expect_load_fails(path, HASH_A, P, MG_RT_ERR_MODEL, err, sizeof err);
    size_t len;
    free(slurp(path, &len));
    ck_assert_uint_eq(len, HDR + sizeof b + SUM);
}
END_TEST

/* Was a bug: the save renamed its temporary over path whatever path was, so a symlink became a
 * regular file (the checkpoint it pointed to left stale) and a FIFO or a device was replaced (as
 * root, saving to /dev/null put a regular file in place of /dev/null). A symlink's target is
 * replaced, the link kept; a FIFO (here) or a device is written into; no temporary is left. */
START_TEST(test_save_through_symlink_and_fifo)
{
    char dir[512], target[600], link[600], fifo[600], err[512];
    unsigned char a[P], b[P], out[P];
    case_dir("links", dir, sizeof dir);
    save_default(dir, "real.params", target, sizeof target, a);
    snprintf(link, sizeof link, "%s/latest.params", dir);
    ck_assert_int_eq(symlink("real.params", link), 0);
    fill_pattern(b, P, 7);
    ck_assert_int_eq(mg_params_save(link, HASH_B, b, P, err, sizeof err), MG_RT_OK);
    struct stat ls;
    ck_assert_int_eq(lstat(link, &ls), 0);
    ck_assert_msg(S_ISLNK(ls.st_mode), "the symlink was replaced by a regular file");
    ck_assert_int_eq(mg_params_load(target, HASH_B, out, P, err, sizeof err), MG_RT_OK);
    ck_assert_mem_eq(out, b, P);
    ck_assert_int_eq(count_entries(dir), 2);

    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    ck_assert_int_eq(mkfifo(fifo, 0666), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader, so the save's open for writing succeeds */
    ck_assert_int_ge(rd, 0);
    ck_assert_int_eq(mg_params_save(fifo, HASH_A, a, P, err, sizeof err), MG_RT_OK);
    unsigned char got[HDR + P + SUM + 1];
    ssize_t n = read(rd, got, sizeof got);
    close(rd);
    ck_assert_int_eq(n, HDR + P + SUM);
    ck_assert_mem_eq(got + HDR, a, P);
    struct stat st;
    ck_assert_int_eq(lstat(fifo, &st), 0);
    ck_assert_msg(S_ISFIFO(st.st_mode), "the FIFO was replaced by a regular file");
    ck_assert_int_eq(count_entries(dir), 3);
}
END_TEST

START_TEST(test_args_and_messages)
{
    char dir[512], path[600], err[512];
    unsigned char payload[P];
    case_dir("args", dir, sizeof dir);
    save_default(dir, "m.params", path, sizeof path, payload);

    ck_assert_int_eq(mg_params_save(NULL, HASH_A, payload, P, err, sizeof err), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_params_save("", HASH_A, payload, P, err, sizeof err), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_params_save(path, HASH_A, NULL, P, err, sizeof err), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_params_load(NULL, HASH_A, payload, P, err, sizeof err), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_params_load(path, HASH_A, NULL, P, err, sizeof err), MG_RT_ERR_ARG);

    /* No message buffer, or a tiny one: still the right status, never an overflow. */
    ck_assert_int_eq(mg_params_load(path, HASH_B, payload, P, NULL, 0), MG_RT_ERR_MODEL);
    ck_assert_int_eq(mg_params_load(path, HASH_B, payload, P, err, 0), MG_RT_ERR_MODEL);
    char tiny[8];
    memset(tiny, 'z', sizeof tiny);
    ck_assert_int_eq(mg_params_load(path, HASH_B, payload, P, tiny, sizeof tiny),
                     MG_RT_ERR_MODEL);
    ck_assert_int_eq(tiny[7], '\0');
    ck_assert_uint_eq(strlen(tiny), 7);
}
END_TEST

START_TEST(test_status_names)
{
    ck_assert_str_eq(mg_rt_status_name(MG_RT_OK), "MG_RT_OK");
    ck_assert_str_eq(mg_rt_status_name(MG_RT_ERR_IO), "MG_RT_ERR_IO");
    ck_assert_str_eq(mg_rt_status_name(MG_RT_ERR_FORMAT), "MG_RT_ERR_FORMAT");
    ck_assert_str_eq(mg_rt_status_name(MG_RT_ERR_MODEL), "MG_RT_ERR_MODEL");
    ck_assert_str_eq(mg_rt_status_name(MG_RT_ERR_CHECKSUM), "MG_RT_ERR_CHECKSUM");
    ck_assert_str_eq(mg_rt_status_name(MG_RT_ERR_TRUNCATED), "MG_RT_ERR_TRUNCATED");
    ck_assert_str_eq(mg_rt_status_name(MG_RT_ERR_SIZE), "MG_RT_ERR_SIZE");
    ck_assert_str_eq(mg_rt_status_name(MG_RT_ERR_ARG), "MG_RT_ERR_ARG");
    ck_assert_str_eq(mg_rt_status_name((mg_rt_status)99), "MG_RT_UNKNOWN");
}
END_TEST

/* ---- optimizers --------------------------------------------------------------------------- */

/* One blob: f32 "w" [2] at 0, f64 "b" [3] at 8, i32 "idx" [2] at 32 (must never change). */
enum { BLOB_BYTES = 40, NT = 3 };
static const mg_tensor_desc k_descs[NT] = {
    { "w", MG_F32, 1, { 2 }, 0, 8 },
    { "b", MG_F64, 1, { 3 }, 8, 24 },
    { "idx", MG_I32, 1, { 2 }, 32, 8 },
};

typedef union {
    double align;
    unsigned char bytes[BLOB_BYTES];
} blob;

static float *w_of(blob *b) { return (float *)(void *)(b->bytes + 0); }
static double *b_of(blob *b) { return (double *)(void *)(b->bytes + 8); }
static int32_t *i_of(blob *b) { return (int32_t *)(void *)(b->bytes + 32); }

/* Sets the five float elements (w[0..1], b[0..2]) and idx = {7, -7}. */
static void blob_set(blob *bl, const double x[5])
{
    memset(bl, 0, sizeof *bl);
    w_of(bl)[0] = (float)x[0];
    w_of(bl)[1] = (float)x[1];
    for (int i = 0; i < 3; i++) b_of(bl)[i] = x[2 + i];
    i_of(bl)[0] = 7;
    i_of(bl)[1] = -7;
}

static void blob_expect(blob *bl, const double want[5], const char *what)
{
    for (int i = 0; i < 2; i++)
        ck_assert_msg(fabs(w_of(bl)[i] - want[i]) <= 1e-6, "%s w[%d] = %.9g, want %.9g", what,
                      i, (double)w_of(bl)[i], want[i]);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(fabs(b_of(bl)[i] - want[2 + i]) <= 1e-12, "%s b[%d] = %.17g, want %.17g",
                      what, i, b_of(bl)[i], want[2 + i]);
    ck_assert_int_eq(i_of(bl)[0], 7);
    ck_assert_int_eq(i_of(bl)[1], -7);
}

static const double k_p0[5] = { 1.0, -2.0, 0.5, 3.0, -1.5 };
static const double k_g1[5] = { 0.5, -1.0, 2.0, 0.25, -0.75 };
static const double k_g2[5] = { 0.25, 0.5, -1.0, 1.0, 0.5 };

/* lr 0.1, momentum 0.9, weight_decay 0.01. Worked for element 0 (p 1, g 0.5 then 0.25):
 *   step 1: d = 0.5 + 0.01*1 = 0.51;        v = 0.51;                p = 1 - 0.051 = 0.949
 *   step 2: d = 0.25 + 0.01*0.949 = 0.25949; v = 0.9*0.51 + d = 0.71849; p = 0.949 - 0.071849
 *           = 0.877151
 * Nesterov, same element: step 1 p = 1 - 0.1*(0.51 + 0.9*0.51) = 0.9031;
 *   step 2: d = 0.25 + 0.009031 = 0.259031; v = 0.459 + d = 0.718031;
 *           p = 0.9031 - 0.1*(0.259031 + 0.6462279) = 0.81257411 */
START_TEST(test_sgd_momentum)
{
    const mg_sgd_config cfg = { .lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = 0 };
    blob p, g, v;
    blob_set(&p, k_p0);
    memset(&v, 0, sizeof v);

    blob_set(&g, k_g1);
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, p.bytes, g.bytes, v.bytes, &cfg), MG_RT_OK);
    const double p1[5] = { 0.949, -1.898, 0.2995, 2.972, -1.4235 };
    const double v1[5] = { 0.51, -1.02, 2.005, 0.28, -0.765 };
    blob_expect(&p, p1, "p after step 1");
    ck_assert_msg(fabs(w_of(&v)[0] - v1[0]) <= 1e-6 && fabs(b_of(&v)[2] - v1[4]) <= 1e-12,
                  "velocity after step 1");

    blob_set(&g, k_g2);
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, p.bytes, g.bytes, v.bytes, &cfg), MG_RT_OK);
    const double p2[5] = { 0.877151, -1.854302, 0.2187505, 2.843828, -1.4032265 };
    const double v2[5] = { 0.71849, -0.43698, 0.807495, 1.28172, -0.202735 };
    blob_expect(&p, p2, "p after step 2");
    for (int i = 0; i < 2; i++) ck_assert_double_eq_tol(w_of(&v)[i], v2[i], 1e-6);
    for (int i = 0; i < 3; i++) ck_assert_double_eq_tol(b_of(&v)[i], v2[2 + i], 1e-12);
    ck_assert_int_eq(i_of(&v)[0], 0); /* state of skipped tensors is not touched either */
}
END_TEST

START_TEST(test_sgd_nesterov)
{
    const mg_sgd_config cfg = { .lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = 1 };
    blob p, g, v;
    blob_set(&p, k_p0);
    memset(&v, 0, sizeof v);
    blob_set(&g, k_g1);
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, p.bytes, g.bytes, v.bytes, &cfg), MG_RT_OK);
    const double p1[5] = { 0.9031, -1.8062, 0.11905, 2.9468, -1.35465 };
    blob_expect(&p, p1, "nesterov step 1");
    blob_set(&g, k_g2);
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, p.bytes, g.bytes, v.bytes, &cfg), MG_RT_OK);
    const double p2[5] = { 0.81257411, -1.81514822, 0.146418805, 2.72852108, -1.385111165 };
    blob_expect(&p, p2, "nesterov step 2");
}
END_TEST

START_TEST(test_sgd_plain)
{
    /* momentum 0: no velocity needed; p -= lr * (g + wd * p). */
    const mg_sgd_config cfg = { .lr = 0.5, .momentum = 0.0, .weight_decay = 0.1, .nesterov = 0 };
    blob p, g;
    blob_set(&p, k_p0);
    blob_set(&g, k_g1);
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, p.bytes, g.bytes, NULL, &cfg), MG_RT_OK);
    double want[5];
    for (int i = 0; i < 5; i++) want[i] = k_p0[i] - 0.5 * (k_g1[i] + 0.1 * k_p0[i]);
    blob_expect(&p, want, "plain sgd");
}
END_TEST

START_TEST(test_adam_first_step_is_lr_sign_g)
{
    /* The exact first update is lr * g / (|g| + eps), which differs from lr * sign(g) by about
     * lr * eps / |g|: keep that (and f32 rounding) well under the 1e-6 tolerance. */
    const double gs[5] = { 0.5, -0.05, 123.0, -7.25, 0.02 };
    const double lrs[3] = { 1e-3, 1e-2, 0.3 };
    for (int k = 0; k < 3; k++) {
        blob p, g, m, v;
        blob_set(&p, k_p0);
        blob_set(&g, gs);
        memset(&m, 0, sizeof m);
        memset(&v, 0, sizeof v);
        mg_adam_state st = { m.bytes, v.bytes, 0 };
        mg_adam_config cfg = mg_adam_defaults(lrs[k]);
        ck_assert_int_eq(mg_adam_step(k_descs, NT, p.bytes, g.bytes, &st, &cfg), MG_RT_OK);
        ck_assert_uint_eq(st.step, 1);
        double want[5];
        for (int i = 0; i < 5; i++) want[i] = k_p0[i] - lrs[k] * (gs[i] > 0 ? 1.0 : -1.0);
        for (int i = 0; i < 2; i++) ck_assert_double_eq_tol(w_of(&p)[i], want[i], 1e-6);
        for (int i = 0; i < 3; i++) ck_assert_double_eq_tol(b_of(&p)[i], want[2 + i], 1e-6);
        ck_assert_int_eq(i_of(&p)[0], 7);
        ck_assert_int_eq(i_of(&m)[0], 0);
        ck_assert_int_eq(i_of(&v)[0], 0);
    }
}
END_TEST

/* AdamW, lr 0.1, wd 0.1, default betas/eps; p 1, g 0.5 then -0.25:
 *   step 1: p = 1*(1-0.01) = 0.99; m = 0.05; v = 0.00025; m^ = 0.5, v^ = 0.25;
 *           p = 0.99 - 0.1*0.5/(0.5+1e-8) = 0.890000002
 *   step 2: p = 0.890000002*0.99; m = 0.045 - 0.025 = 0.02; v = 0.00024975 + 0.0000625 =
 *           0.00031225; p -= 0.1/0.19 * 0.02 / (sqrt(0.00031225)/sqrt(0.001999) + 1e-8)
 *           = 0.8544662986878463 (the update u = 0.0266337033) */
START_TEST(test_adamw_two_steps)
{
    const double p0[5] = { 1.0, -2.0, 1.0, 1.0, -2.0 };
    const double g1[5] = { 0.5, 0.5, 0.5, 0.5, 0.5 }, g2[5] = { -0.25, -0.25, -0.25, -0.25, -0.25 };
    blob p, g, m, v;
    blob_set(&p, p0);
    memset(&m, 0, sizeof m);
    memset(&v, 0, sizeof v);
    mg_adam_state st = { m.bytes, v.bytes, 0 };
    mg_adam_config cfg = mg_adam_defaults(0.1);
    cfg.weight_decay = 0.1;
    blob_set(&g, g1);
    ck_assert_int_eq(mg_adam_step(k_descs, NT, p.bytes, g.bytes, &st, &cfg), MG_RT_OK);
    blob_set(&g, g2);
    ck_assert_int_eq(mg_adam_step(k_descs, NT, p.bytes, g.bytes, &st, &cfg), MG_RT_OK);
    ck_assert_uint_eq(st.step, 2);
    /* p0 = -2: step 1 p = -1.98 - 0.099999998 = -2.079999998; step 2 takes the same Adam update
     * u = 0.1/0.19 * 0.02 / (sqrt(0.00031225)/sqrt(0.001999) + 1e-8) = 0.0266337033 as p0 = 1:
     * p = -2.079999998*0.99 - u = -2.0858337013121537 */
    const double a = 0.8544662986878463, bneg = -2.0858337013121537;
    const double want[5] = { a, bneg, a, a, bneg };
    blob_expect(&p, want, "adamw");
    ck_assert_double_eq_tol(b_of(&m)[0], 0.02, 1e-15);
    ck_assert_double_eq_tol(b_of(&v)[0], 0.00031225, 1e-15);
}
END_TEST

START_TEST(test_adam_converges_on_quadratic)
{
    /* f = sum_i 0.5 * a_i * (x_i - c_i)^2, minimum at c, gradient a_i * (x_i - c_i). */
    const double a[5] = { 1.0, 10.0, 0.5, 3.0, 100.0 };
    const double c[5] = { 0.25, -0.75, 1.5, -3.0, 0.125 };
    blob p, g, m, v;
    blob_set(&p, k_p0);
    memset(&m, 0, sizeof m);
    memset(&v, 0, sizeof v);
    mg_adam_state st = { m.bytes, v.bytes, 0 };
    mg_adam_config cfg = mg_adam_defaults(0.05);
    double x[5], f0 = 0, f = 0;
    for (int i = 0; i < 5; i++) f0 += 0.5 * a[i] * (k_p0[i] - c[i]) * (k_p0[i] - c[i]);
    for (int it = 0; it < 400; it++) {
        x[0] = w_of(&p)[0];
        x[1] = w_of(&p)[1];
        for (int i = 0; i < 3; i++) x[2 + i] = b_of(&p)[i];
        double gr[5];
        for (int i = 0; i < 5; i++) gr[i] = a[i] * (x[i] - c[i]);
        blob_set(&g, gr);
        ck_assert_int_eq(mg_adam_step(k_descs, NT, p.bytes, g.bytes, &st, &cfg), MG_RT_OK);
    }
    x[0] = w_of(&p)[0];
    x[1] = w_of(&p)[1];
    for (int i = 0; i < 3; i++) x[2 + i] = b_of(&p)[i];
    for (int i = 0; i < 5; i++) {
        f += 0.5 * a[i] * (x[i] - c[i]) * (x[i] - c[i]);
        ck_assert_msg(fabs(x[i] - c[i]) < 1e-2, "x[%d] = %g, minimum at %g", i, x[i], c[i]);
    }
    ck_assert_msg(f < 1e-6 * f0, "loss %g -> %g", f0, f);
    ck_assert_uint_eq(st.step, 400);
    ck_assert_int_eq(i_of(&p)[1], -7);
}
END_TEST

/* The optimizers refuse what they cannot run (review19: they returned nothing, so beta1 = 1, a
 * NaN learning rate or eps = 0 turned every parameter into NaN or inf without a word): a status
 * names the problem and no blob, nor Adam's step count, is touched. */
START_TEST(test_optim_refuses_bad_settings)
{
    const double inf = INFINITY, qnan = NAN;
    blob p, g, v, m, p_before, v_before, m_before;
    blob_set(&p, k_p0);
    blob_set(&g, k_g1);
    memset(&v, 0x5a, sizeof v); /* any state: it must come back as it was */
    memset(&m, 0x3c, sizeof m);
    p_before = p;
    v_before = v;
    m_before = m;

    const mg_sgd_config sgd_ok = { .lr = 0.1, .momentum = 0.9, .weight_decay = 0.0, .nesterov = 0 };
    const mg_sgd_config sgd_bad[] = {
        { .lr = qnan, .momentum = 0.9 }, { .lr = -0.1, .momentum = 0.9 }, { .lr = inf, .momentum = 0.9 },
        { .lr = 0.1, .momentum = -0.5 }, { .lr = 0.1, .momentum = qnan }, { .lr = 0.1, .momentum = 0.9, .weight_decay = -1 },
        { .lr = 0.1, .momentum = 0.9, .weight_decay = qnan }, { .lr = 0.1, .momentum = 0.0, .nesterov = 1 },
    };
    for (size_t i = 0; i < sizeof sgd_bad / sizeof sgd_bad[0]; i++)
        ck_assert_msg(mg_sgd_step(k_descs, NT, p.bytes, g.bytes, v.bytes, &sgd_bad[i]) == MG_RT_ERR_CONFIG,
                      "sgd setting %zu accepted", i);
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, p.bytes, g.bytes, NULL, &sgd_ok), MG_RT_ERR_ARG); /* momentum, no velocity */
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, NULL, g.bytes, v.bytes, &sgd_ok), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, p.bytes, NULL, v.bytes, &sgd_ok), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_sgd_step(NULL, NT, p.bytes, g.bytes, v.bytes, &sgd_ok), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_sgd_step(k_descs, -1, p.bytes, g.bytes, v.bytes, &sgd_ok), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, p.bytes, g.bytes, v.bytes, NULL), MG_RT_ERR_ARG);
    /* nothing to update (a model without params: its blobs of 0 bytes may be NULL) */
    ck_assert_int_eq(mg_sgd_step(NULL, 0, NULL, NULL, NULL, &sgd_ok), MG_RT_OK);
    ck_assert_int_eq(mg_sgd_step(NULL, 0, NULL, NULL, NULL, &sgd_bad[0]), MG_RT_ERR_CONFIG);
    ck_assert_msg(!memcmp(&p, &p_before, sizeof p) && !memcmp(&v, &v_before, sizeof v), "a refused SGD step wrote");

    mg_adam_state st = { m.bytes, v.bytes, 7 };
    const mg_adam_config ok = mg_adam_defaults(1e-3);
    mg_adam_config bad[12];
    for (int i = 0; i < 12; i++) bad[i] = ok;
    bad[0].beta1 = 1.0;
    bad[1].beta1 = -0.1;
    bad[2].beta2 = 1.0;
    bad[3].beta2 = qnan;
    bad[4].eps = 0.0;
    bad[5].eps = -1e-8;
    bad[6].eps = inf;
    bad[7].lr = qnan;
    bad[8].lr = -1e-3;
    bad[9].lr = inf;
    bad[10].weight_decay = -0.01;
    bad[11].weight_decay = qnan;
    for (int i = 0; i < 12; i++)
        ck_assert_msg(mg_adam_step(k_descs, NT, p.bytes, g.bytes, &st, &bad[i]) == MG_RT_ERR_CONFIG,
                      "adam setting %d accepted", i);
    ck_assert_int_eq(mg_adam_step(k_descs, NT, p.bytes, g.bytes, NULL, &ok), MG_RT_ERR_ARG);
    mg_adam_state no_m = { NULL, v.bytes, 7 };
    ck_assert_int_eq(mg_adam_step(k_descs, NT, p.bytes, g.bytes, &no_m, &ok), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_adam_step(k_descs, NT, NULL, g.bytes, &st, &ok), MG_RT_ERR_ARG);
    ck_assert_int_eq(mg_adam_step(k_descs, NT, p.bytes, g.bytes, &st, NULL), MG_RT_ERR_ARG);
    ck_assert_uint_eq(st.step, 7);
    mg_adam_state none = { NULL, NULL, 0 };
    ck_assert_int_eq(mg_adam_step(NULL, 0, NULL, NULL, &none, &ok), MG_RT_OK);
    ck_assert_uint_eq(none.step, 1);
    ck_assert_msg(!memcmp(&p, &p_before, sizeof p) && !memcmp(&v, &v_before, sizeof v) &&
                      !memcmp(&m, &m_before, sizeof m),
                  "a refused Adam step wrote");
    ck_assert_str_eq(mg_rt_status_name(MG_RT_ERR_CONFIG), "MG_RT_ERR_CONFIG");

    /* the limits themselves run: lr 0, momentum 0 without velocity, beta1 0 */
    const mg_sgd_config zero = { 0 };
    ck_assert_int_eq(mg_sgd_step(k_descs, NT, p.bytes, g.bytes, NULL, &zero), MG_RT_OK);
    ck_assert_msg(!memcmp(&p, &p_before, sizeof p), "lr 0 moved the params");
    mg_adam_config b0 = ok;
    b0.beta1 = 0.0;
    memset(&m, 0, sizeof m);
    memset(&v, 0, sizeof v);
    ck_assert_int_eq(mg_adam_step(k_descs, NT, p.bytes, g.bytes, &st, &b0), MG_RT_OK);
    ck_assert_uint_eq(st.step, 8);
}
END_TEST

START_TEST(test_adam_defaults)
{
    mg_adam_config c = mg_adam_defaults(3e-4);
    ck_assert_double_eq(c.lr, 3e-4);
    ck_assert_double_eq(c.beta1, 0.9);
    ck_assert_double_eq(c.beta2, 0.999);
    ck_assert_double_eq(c.eps, 1e-8);
    ck_assert_double_eq(c.weight_decay, 0.0);
}
END_TEST

/* An application may build the runtime's sources itself, without the project's -D_GNU_SOURCE:
 * each file asks for what it calls (params_file.c called realpath under _POSIX_C_SOURCE alone,
 * implicitly declared as returning int, and a save through a symlink crashed on the truncated
 * pointer). */
START_TEST(test_sources_build_on_their_own)
{
    const char *files[] = {"params_file.c", "optim.c"};
    for (int i = 0; i < 2; i++) {
        char cmd[2048], *out;
        snprintf(cmd, sizeof cmd, "'%s' -std=c11 -Wall -Wextra -Werror -pedantic -I '%s/runtime' -c '%s/runtime/%s' -o '%s/rt.o'",
                 MG_CC, MG_SOURCE_DIR, MG_SOURCE_DIR, files[i], g_root);
        int rc = tu_run(cmd, &out);
        ck_assert_msg(rc == 0, "%s does not build on its own:\n%s", files[i], out);
        free(out);
    }
}
END_TEST

/* ---- driver ------------------------------------------------------------------------------- */

static Suite *params_suite(void)
{
    Suite *s = suite_create("params_file");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_model_mismatch);
    tcase_add_test(tc, test_checksum_every_payload_byte);
    tcase_add_test(tc, test_corrupt_size_field);
    tcase_add_test(tc, test_truncated);
    tcase_add_test(tc, test_bad_magic);
    tcase_add_test(tc, test_unsupported_version);
    tcase_add_test(tc, test_reserved_nonzero);
    tcase_add_test(tc, test_trailing_garbage);
    tcase_add_test(tc, test_nonexistent);
    tcase_add_test(tc, test_wrong_size);
    tcase_add_test(tc, test_save_into_missing_dir);
    tcase_add_test(tc, test_save_rename_failure_cleans_up);
    tcase_add_test(tc, test_save_replaces_existing);
    tcase_add_test(tc, test_save_through_symlink_and_fifo);
    tcase_add_test(tc, test_args_and_messages);
    tcase_add_test(tc, test_status_names);
    tcase_add_test(tc, test_sources_build_on_their_own);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *optim_suite(void)
{
    Suite *s = suite_create("optim");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_sgd_momentum);
    tcase_add_test(tc, test_sgd_nesterov);
    tcase_add_test(tc, test_sgd_plain);
    tcase_add_test(tc, test_adam_first_step_is_lr_sign_g);
    tcase_add_test(tc, test_adamw_two_steps);
    tcase_add_test(tc, test_adam_converges_on_quadratic);
    tcase_add_test(tc, test_adam_defaults);
    tcase_add_test(tc, test_optim_refuses_bad_settings);
    suite_add_tcase(s, tc);
    return s;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(void)
{
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(params_suite());
    srunner_add_suite(sr, optim_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (nftw(g_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
        perror("removing test directory");
        failed++;
    }
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
