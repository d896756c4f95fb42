/* out_files.c — the files the driver writes, checked before planning and written whole.
 *
 * Why it exists: planning can take a minute, so an output that cannot be written (a missing
 * directory, a directory, the model itself) is found before it starts, not after. A regular
 * file is written to a temporary file next to it and renamed into place once every output is
 * written, so a failure leaves the user's old files as they were; a symlink to a regular file
 * has its target replaced, the link kept. What is not a regular file — /dev/null, a FIFO,
 * /dev/stdout on a pipe or a terminal — is written through: renaming over it replaced the
 * device node or the link (as root, `-o /dev/null` put a regular file in place of /dev/null).
 * Driver code: it prints its errors. */
#include "out_files.h"

#include "write_all.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cannot_write(const mg_out_file *o, int err)
{
    fprintf(stderr, "memgrad: cannot write %s: %s\n", o->path, strerror(err));
    return 1;
}

/* path with the symlinks it names followed to what is not one (at most 40, as Linux follows),
 * each relative target read against its link's directory: for a dangling link, the file that
 * writing through it creates. */
static void follow_links(const char *path, char *out, size_t cap)
{
    char cur[PATH_MAX], target[PATH_MAX];
    snprintf(cur, sizeof cur, "%s", path);
    for (int depth = 0; depth < 40; depth++) {
        ssize_t k = readlink(cur, target, sizeof target - 1);
        if (k < 0) break; /* not a link (or nothing there) */
        target[k] = 0;
        const char *slash = strrchr(cur, '/');
        size_t keep = target[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1; /* the link's directory */
        if (keep + (size_t)k >= sizeof cur) break;
        memcpy(cur + keep, target, (size_t)k + 1);
    }
    snprintf(out, cap, "%s", cur);
}

/* The canonical spelling of path, which need not exist yet: realpath of the file, or, its
 * symlinks followed, realpath of its directory and its base name. A dangling link (realpath
 * fails) was spelt by its own name, so `-o alink.o --header a.o`, alink.o a link to the a.o not
 * yet made, wrote both into a.o and exited 0. */
static void canonical_path(const char *path, char *out, size_t cap)
{
    char buf[PATH_MAX], file[PATH_MAX];
    if (realpath(path, buf)) {
        snprintf(out, cap, "%s", buf);
        return;
    }
    follow_links(path, file, sizeof file);
    const char *slash = strrchr(file, '/');
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - file) + (slash == file) : 1, slash ? file : ".");
    const char *base = slash ? slash + 1 : file;
    size_t nb, nbase = strlen(base);
    if (realpath(dir, buf) && (nb = strlen(buf)) + 1 + nbase < cap) {
        memcpy(out, buf, nb);
        out[nb] = '/';
        memcpy(out + nb + 1, base, nbase + 1);
    } else {
        snprintf(out, cap, "%s", file);
    }
}

int mg_out_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ca[PATH_MAX + 256], cb[PATH_MAX + 256];
    canonical_path(a, ca, sizeof ca);
    canonical_path(b, cb, sizeof cb);
    return !strcmp(ca, cb);
}

static int is_char_device(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISCHR(st.st_mode);
}

/* Creates an empty temporary file next to dest (so rename() can replace it atomically), named
 * after dest's name cut to 200 bytes: a name of 240 bytes and its ".tmp.PID.N" passed the 255 a
 * name may have, and the output could not be written. */
static int create_tmp_next_to(mg_out_file *o)
{
    const char *slash = strrchr(o->dest, '/'), *base = slash ? slash + 1 : o->dest;
    int keep = (int)(base - o->dest) + (strlen(base) > 200 ? 200 : (int)strlen(base));
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(o->tmp, sizeof o->tmp, "%.*s.tmp.%ld.%d", keep, o->dest, (long)getpid(), attempt);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        if (errno != EEXIST) break;
    }
    int err = errno;
    o->tmp[0] = 0;
    if (access(o->dest, F_OK) == 0) { /* (a file that exists, maybe writable, in a directory that is not:
                                          "Permission denied" alone read as the file's own mode) */
        const char *slash = strrchr(o->dest, '/');
        fprintf(stderr, "memgrad: cannot write %s: cannot create a file in %.*s beside it (%s); the output is "
                        "written there first, then renamed over it\n",
                o->path, slash ? (int)(slash - o->dest) + (slash == o->dest) : 1, slash ? o->dest : ".", strerror(err));
        return 1;
    }
    return cannot_write(o, err);
}

/* Where o goes: dest and direct; a directory is an error. */
static int resolve(mg_out_file *o)
{
    struct stat ls, st;
    snprintf(o->dest, sizeof o->dest, "%s", o->path);
    o->direct = 0;
    if (lstat(o->path, &ls) != 0) return 0; /* a new file */
    if (stat(o->path, &st) != 0) {
        o->direct = S_ISLNK(ls.st_mode); /* a dangling link: created through it */
        return 0;
    }
    if (S_ISDIR(st.st_mode)) return cannot_write(o, EISDIR);
    for (int fd = 1; fd <= 2; fd++) { /* /dev/stdout, or the file stdout goes to: after what is there */
        struct stat sf;
        if (fstat(fd, &sf) == 0 && sf.st_dev == st.st_dev && sf.st_ino == st.st_ino) {
            o->direct = 2;
            return 0;
        }
    }
    if (!S_ISREG(st.st_mode)) {
        o->direct = 1;
        return 0;
    }
    char buf[PATH_MAX];
    if (S_ISLNK(ls.st_mode)) {
        if (realpath(o->path, buf)) snprintf(o->dest, sizeof o->dest, "%s", buf);
        else o->direct = 1;
    }
    return 0;
}

int mg_out_check(const char *model, mg_out_file *o, int n) { return mg_out_check_input(model, "model", o, n); }

int mg_out_check_input(const char *input, const char *kind, mg_out_file *o, int n)
{
    for (int i = 0; i < n; i++) {
        o[i].tmp[0] = 0;
        if (!o[i].path) continue;
        if (input && mg_out_same_file(input, o[i].path)) {
            /* (naming the option and the path given: "-o hl.o", a hard link or a symlink to the
             * model, read as if memgrad had named another file; review21. And the input's kind:
             * `sweep --graph g.json --svg g.json` was refused as "the model file g.json") */
            fprintf(stderr, "memgrad: refusing to overwrite the %s file %s with %s %s\nTry 'memgrad --help'.\n",
                    kind ? kind : "input", input, o[i].flag, o[i].path);
            return 2;
        }
        for (int j = 0; j < i; j++)
            if (o[j].path && mg_out_same_file(o[i].path, o[j].path) && !is_char_device(o[i].path)) {
                /* ("-" is /dev/stdout by now: "-o - --emit-llvm -" named a file the user never wrote) */
                if (!strcmp(o[i].path, "/dev/stdout") && !strcmp(o[j].path, "/dev/stdout"))
                    fprintf(stderr, "memgrad: %s and %s both name the standard output; give one of them a file\n"
                            "Try 'memgrad --help'.\n", o[j].flag, o[i].flag);
                else
                    fprintf(stderr, "memgrad: %s and %s name the same file %s\nTry 'memgrad --help'.\n", o[j].flag,
                            o[i].flag, o[i].path);
                return 2;
            }
    }
    for (int i = 0; i < n; i++) {
        if (!o[i].path) continue;
        if (resolve(&o[i])) return 1;
        if (o[i].direct) {
            if (access(o[i].path, W_OK) != 0 && errno != ENOENT) return cannot_write(&o[i], errno);
            continue;
        }
        /* a probe: the file can be made where it goes */
        if (create_tmp_next_to(&o[i])) return 1;
        remove(o[i].tmp);
        o[i].tmp[0] = 0;
    }
    return 0;
}

int mg_out_begin(mg_out_file *o, int n)
{
    for (int i = 0; i < n; i++) {
        if (!o[i].path) continue;
        if (!o[i].direct) {
            if (create_tmp_next_to(&o[i])) return 1;
            continue;
        }
        const char *t = getenv("TMPDIR");
        snprintf(o[i].tmp, sizeof o[i].tmp, "%s/memgrad-out.XXXXXX", t && t[0] == '/' ? t : "/tmp");
        int fd = mkstemp(o[i].tmp);
        if (fd < 0) {
            int err = errno;
            fprintf(stderr, "memgrad: cannot write %s: a temporary file in %s: %s\n", o[i].path,
                    t && t[0] == '/' ? t : "/tmp", strerror(err));
            o[i].tmp[0] = 0;
            return 1;
        }
        close(fd);
    }
    return 0;
}

/* Copies the temporary file into the output, which is opened for writing, not replaced: 0, or
 * the errno of what failed. */
static int copy_into(const mg_out_file *o)
{
    int in = open(o->tmp, O_RDONLY);
    if (in < 0) return errno;
    int out = open(o->path, o->direct == 2 ? O_WRONLY | O_APPEND : O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (out < 0) {
        int err = errno;
        close(in);
        return err;
    }
    int err = 0;
    char buf[1 << 16];
    ssize_t k;
    while (!err && (k = read(in, buf, sizeof buf)) != 0) {
        if (k < 0) {
            if (errno != EINTR) err = errno;
            continue;
        }
        err = mg_write_all(out, buf, (size_t)k);
    }
    if (close(out) != 0 && !err) err = errno;
    close(in);
    return err;
}

/* The outputs written into (the standard output, a device, a FIFO) first, whose writes can fail
 * (a full disk, a closed pipe), then the renames, which the probe in mg_out_check has tried: a
 * failure writing one leaves every regular file as it was. In the order given, `-o new.o
 * --header -` with a full standard output exited 1 and left new.o in place, whose header was
 * never written (review22). */
int mg_out_commit(mg_out_file *o, int n)
{
    /* A pipe closed early (`compile -o m.o --emit-llvm - | head`) killed memgrad by SIGPIPE in the
     * flush or the copy below and left every temporary file behind (m.o.tmp.PID.0). SIGPIPE
     * waits here: on a closed pipe the temporaries are removed, nothing is put in place, and
     * memgrad ends by SIGPIPE as before. (Where SIGPIPE was ignored when memgrad started, the
     * write fails with EPIPE and is said as any other.) */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&ign.sa_mask);
    int set = sigaction(SIGPIPE, &ign, &old) == 0, held = set && old.sa_handler == SIG_DFL;
    int rc = 0, err = fflush(NULL) == EOF ? errno : 0; /* a report on stdout comes before a file
                                                          written to /dev/stdout */
    if (!held || err != EPIPE) err = 0;
    for (int pass = 0; pass < 2 && !rc && !err; pass++)
        for (int i = 0; i < n && !rc && !err; i++) {
            if (!o[i].path || !o[i].tmp[0] || (o[i].direct ? 0 : 1) != pass) continue;
            err = o[i].direct ? copy_into(&o[i]) : rename(o[i].tmp, o[i].dest) != 0 ? errno : 0;
            if (err && !(held && err == EPIPE)) rc = cannot_write(&o[i], err);
        }
    if (held && err == EPIPE) {
        mg_out_end(o, n);
        signal(SIGPIPE, SIG_DFL);
        raise(SIGPIPE);
    }
    if (set) sigaction(SIGPIPE, &old, NULL);
    return rc || err;
}

void mg_out_end(mg_out_file *o, int n)
{
    for (int i = 0; i < n; i++)
        if (o[i].path && o[i].tmp[0]) {
            remove(o[i].tmp); /* fails harmlessly once renamed */
            o[i].tmp[0] = 0;
        }
}
