/* testutil.h — shared helpers for memgrad's Check suites: temporary directories, running
 * commands, and compiling a model text through the real `memgrad` binary into a shared object
 * that a test loads with dlopen. Paths to the tools come from CMake (MG_MEMGRAD, MG_CC,
 * MG_SOURCE_DIR). */
#ifndef MG_TESTUTIL_H
#define MG_TESTUTIL_H
#include <check.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* TU_SANITIZED: 1 in the ASan+UBSan build (tests/CMakeLists.txt defines MG_TEST_SANITIZED), where
 * the random property tests run fewer problems. Each CBC solve (a child process) costs 0.16-0.2 s
 * there against 40 ms in the normal build, nearly all of it ASan's allocator and page faults in
 * the child, not memgrad's code; the normal build runs every problem. */
#ifdef MG_TEST_SANITIZED
enum { TU_SANITIZED = 1 };
#else
enum { TU_SANITIZED = 0 };
#endif

/* A fresh directory under $TMPDIR (or /tmp); free with tu_rmtree + free. */
char *tu_tmpdir(void);
void tu_rmtree(const char *dir);
/* dir/name, in a static ring of 8 buffers so a few can be live at once. */
const char *tu_path(const char *dir, const char *name);
/* Removes *dir and everything in it, frees it and sets it to NULL. */
void tu_dir_free(char **dir);
/* Writes text to path; returns 0 on success. */
int tu_write(const char *path, const char *text);
/* Reads a whole file (NUL-terminated, malloc'd) or NULL. */
char *tu_read(const char *path);
/* A public planning benchmark graph, bench/data/NAME (e.g. "checkmate/unet.json"), read and
 * parsed as the planner's problem; the test fails when it cannot be. */
struct mg_problem *tu_load_graph(const char *name);
/* A random training-like problem: forward values (droppable) reading one or two earlier ones,
 * then backward values (computed once) each reading the previous backward value and a forward
 * value, the last one read after the end. Sizes and costs uneven; with_scratch: some ops need
 * scratch memory. *seed advances. */
struct mg_problem *tu_random_problem(uint64_t *seed, int nfwd, int nbwd, int with_scratch);
/* Runs cmd with sh -c; stdout and stderr go to *out (malloc'd, may be NULL). Returns the exit
 * status, or -1 if it did not exit normally. */
int tu_run(const char *cmd, char **out);
/* A plan's JSON with its "solve_seconds" field left out (two runs' plans then compare equal
 * byte for byte; zeroing the digits did not: 9.8 s and 10.2 s have different lengths). */
void tu_drop_solve_seconds(char *json);
/* Runs `memgrad ARGS` (ARGS printf-formatted; quote paths with '%s'); like tu_run. */
int tu_memgrad(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tu_vmemgrad(char **out, const char *fmt, va_list ap);
/* Writes src to dir/name.mg, compiles it with memgrad (extra options appended) into
 * dir/name.o, links dir/name.so and dlopens it. Returns the handle, or NULL with the
 * command output in *log (malloc'd). */
void *tu_build_model(const char *dir, const char *name, const char *src, const char *options, char **log);
/* dlsym that fails the running test when the symbol is missing. */
void *tu_sym(void *handle, const char *model, const char *suffix);
/* The value of the #define in a generated header whose name ends in suffix (fails the running
 * test when there is none). */
long long tu_header_figure(const char *header, const char *suffix);
/* The same of a hexadecimal #define (0x...ULL: NAME_PLAN_HASH). */
unsigned long long tu_header_hash(const char *header, const char *suffix);
/* The integer after "key": in a plan's JSON (fails the running test when there is none). */
long long tu_json_figure(const char *json, const char *key);
/* Runs every test of s; the process exit status (EXIT_SUCCESS when all pass). */
int tu_run_suite(Suite *s);
#endif
