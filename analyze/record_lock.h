/* record_lock.h: one writer per record folder, and what kind of record a
 * folder is, so that no output overwrites an input or another record.
 *
 * The lock (record_lock.c).  A writer holds an exclusive flock on
 * DIR/.ampscope.lock for as long as it writes DIR; the file's text,
 * written once the lock is taken, is "ampscope KIND PID\n" (KIND the
 * command: train, sweep, report, reproduce, inspect).  A second writer is refused at
 * once, naming the holder's pid.  The kernel drops a flock when its
 * process dies, so the file a killed writer leaves behind blocks nobody;
 * the file stays (removing it would race a writer that has it open) and
 * its KIND tells later commands what wrote the folder.
 *
 * Ownership (record_owner.c).  A folder is a training run (run.json,
 * steps.csv, a checkpoint), a sweep folder (sweep.json, sweep.lock, runs/),
 * a report, a reproduce folder (a report with runs/), an inspect folder (a
 * report's files, known by its lock), empty, or foreign
 * (something ampscope did not write).  A command's output must not be one
 * of its inputs (compared by device and inode, not by text) nor lie inside
 * a run, sweep or reproduce folder other than the one that owns it (a
 * sweep's runs lie in the sweep's folder); an output folder that holds
 * anything but a compatible record of the same command is refused unless
 * --force, which removes only the files ampscope writes, and never when a
 * foreign file or one of the command's inputs is there.
 */
#ifndef AMPSCOPE_RECORD_LOCK_H
#define AMPSCOPE_RECORD_LOCK_H

#include <stdbool.h>
#include <stddef.h>

#include "atomic_file.h" /* AN_OK, AN_EINVAL, AN_EIO */

#ifdef __cplusplus
extern "C" {
#endif

#define REC_LOCK_FILE     ".ampscope.lock"
#define REC_LOCK_KIND_MAX 32

/* ---- the lock (record_lock.c) ---------------------------------------------------------------- */
/* Takes DIR's lock for `ampscope kind` without waiting and writes its text
 * (unless write_text is false: rec_lock_write_text then writes it).
 * AN_OK with the descriptor in *fd (close-on-exec; rec_lock_release it);
 * AN_EINVAL when another process holds it ("DIR is in use by ampscope train
 * (pid 1234); wait for it or stop it"); AN_EIO with the path and errno
 * text.  *created says whether the lock file was made here (NULL: not
 * wanted). */
int rec_lock_take(const char *dir, const char *kind, bool write_text, int *fd, bool *created,
                  char *msg, size_t msg_len);
/* Writes "ampscope KIND PID\n" into a lock taken by rec_lock_take. */
int rec_lock_write_text(int fd, const char *dir, const char *kind, char *msg, size_t msg_len);
/* The KIND a lock file's text names (the last writer's command), or ""
 * when it has none.  Reads only. */
void rec_lock_kind(const char *dir, char *kind, size_t kind_len);
/* Gives the lock up (closes fd); harmless on -1. */
void rec_lock_release(int fd);

/* ---- what a folder is (record_owner.c) ------------------------------------------------------- */
typedef enum rec_folder {
    REC_FOLDER_ABSENT = 0, /* no such path */
    REC_FOLDER_NOT_DIR,    /* a file, or something else that is not a directory */
    REC_FOLDER_EMPTY,      /* nothing in it but a lock file */
    REC_FOLDER_TRAIN,      /* a training run */
    REC_FOLDER_SWEEP,      /* a sweep folder */
    REC_FOLDER_REPORT,     /* a report (index.html, figures, plots/) */
    REC_FOLDER_REPRODUCE,  /* reproduce's folder: a report and runs/ */
    REC_FOLDER_INSPECT,    /* `inspect --plot`'s folder: a report's files, its lock says inspect */
    REC_FOLDER_FOREIGN     /* it holds something ampscope does not write */
} rec_folder;

/* What DIR is.  Every entry must be one ampscope writes for that kind
 * (temporary "NAME.tmp.PID" files and lock files included), else FOREIGN
 * with one such entry's name ("notes.txt", "runs/x/y") in foreign (may be
 * NULL). */
rec_folder rec_folder_kind(const char *dir, char *foreign, size_t foreign_len);
/* "a training run", "a sweep folder", ... for messages. */
const char *rec_folder_name(rec_folder k);
/* The folder kind of a command's output ("train" -> REC_FOLDER_TRAIN), or
 * REC_FOLDER_FOREIGN. */
rec_folder rec_folder_of_command(const char *command);

/* An input of a command: the option that named it and its path. */
typedef struct rec_input {
    const char *option, *path;
} rec_input;

/* Checks an output path (a file or a folder, existing or not) given as
 * option: AN_OK, or AN_EINVAL with one line when it is one of the inputs
 * (same device and inode), lies inside an input folder, or lies inside a
 * training run, sweep or reproduce folder other than owner (NULL: none;
 * the owner and every folder above it are the owner's business).  Reads
 * only. */
int rec_check_output(const char *option, const char *path, const char *owner,
                     const rec_input *inputs, size_t n_inputs, char *msg, size_t msg_len);

/* What a command asks of its output folder (rec_take_out_dir). */
typedef struct rec_out_dir {
    const char *option;  /* "--out" (or "--resume") for messages */
    const char *dir;     /* the folder */
    const char *command; /* "train", "sweep", "report", "reproduce": the lock's KIND */
    const char *owner;   /* the folder of the study this output belongs to, or NULL */
    const rec_input *inputs;
    size_t n_inputs;
    bool reuse;  /* a record of the same command may be written again (the command resumes) */
    bool resume; /* the folder must exist; its content is the caller's to check */
    bool force;  /* --force: replace a record (ampscope's files only) */
    /* with reuse: whether the existing record is this command's (a sweep of the same grid);
     * false with a one-line reason in why. NULL: any record of the command is. */
    bool (*compatible)(const char *dir, void *ctx, char *why, size_t why_len);
    void *ctx;
} rec_out_dir;

/* Takes an output folder: rec_check_output; the folder made when missing
 * (its parent must exist: nothing else is created); its lock; then, under
 * the lock, its content: empty, or a compatible record of the same command
 * (reuse), or the resumed run; anything else is refused unless force,
 * which removes ampscope's files (said gets one line saying what; "" when
 * nothing was removed).  On a refusal nothing is left behind (a folder or
 * lock file made here is removed).  AN_OK with the lock in *lock_fd;
 * AN_EINVAL (bad input) or AN_EIO with one line in msg. */
int rec_take_out_dir(const rec_out_dir *o, int *lock_fd, char *said, size_t said_len, char *msg,
                     size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif
