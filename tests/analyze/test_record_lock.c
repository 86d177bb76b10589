/* test_record_lock: one writer per record folder and what a folder is
 * (analyze/record_lock.h).  The lock's text and its refusal naming the
 * holder (another open in this process, a child process), a dead holder's
 * file blocking nobody; the kinds of folder, foreign entries named; outputs
 * onto inputs (by inode: a hard link, another spelling) and into records
 * refused, an owner's folder allowed; an output folder taken, refused with
 * nothing left behind, cleared by --force of ampscope's files only. */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "files.h"
#include "record_lock.h"
#include "scratch.h"

static pid_t dead_pid(void)
{
    const pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
    return p;
}

START_TEST(lock_text_and_second_writer)
{
    char dir[80], path[128], text[64], msg[512];
    new_dir(dir, sizeof dir);
    int fd, fd2;
    bool created;
    ck_assert_int_eq(rec_lock_take(dir, "train", true, &fd, &created, msg, sizeof msg), AN_OK);
    ck_assert(created);
    path_in(path, sizeof path, dir, ".ampscope.lock");
    snprintf(text, sizeof text, "ampscope train %ld\n", (long)getpid());
    assert_file(path, text);
    /* a second open file description is a second writer, in this process too */
    ck_assert_int_eq(rec_lock_take(dir, "sweep", true, &fd2, NULL, msg, sizeof msg), AN_EINVAL);
    ck_assert_int_eq(fd2, -1);
    char refusal[128];
    snprintf(refusal, sizeof refusal, "is in use by ampscope train (pid %ld); wait for it",
             (long)getpid());
    ASSERT_MSG(msg, refusal);
    ASSERT_MSG(msg, dir);
    assert_file(path, text); /* the holder's text stays */
    rec_lock_release(fd);
    rec_lock_release(-1); /* harmless */
    ck_assert_int_eq(rec_lock_take(dir, "report", true, &fd, &created, msg, sizeof msg), AN_OK);
    ck_assert(!created);
    char kind[REC_LOCK_KIND_MAX];
    rec_lock_kind(dir, kind, sizeof kind);
    ck_assert_str_eq(kind, "report");
    rec_lock_release(fd);
}
END_TEST

START_TEST(lock_held_by_a_child_then_dead)
{
    char dir[80], text[64], msg[512];
    new_dir(dir, sizeof dir);
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    const pid_t child = fork();
    if (child == 0) {
        int fd;
        if (rec_lock_take(dir, "sweep", true, &fd, NULL, NULL, 0) != AN_OK) _exit(1);
        if (write(ready[1], "x", 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    int fd;
    ck_assert_int_eq(rec_lock_take(dir, "sweep", true, &fd, NULL, msg, sizeof msg), AN_EINVAL);
    snprintf(text, sizeof text, "in use by ampscope sweep (pid %ld)", (long)child);
    ASSERT_MSG(msg, text);
    /* the kernel drops a dead process's lock; its file blocks nobody */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ck_assert_int_eq(rec_lock_take(dir, "train", true, &fd, NULL, msg, sizeof msg), AN_OK);
    rec_lock_release(fd);
    close(ready[0]);
    close(ready[1]);
}
END_TEST

START_TEST(lock_stale_text)
{
    char dir[80], path[128], text[64], msg[512];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, ".ampscope.lock");
    snprintf(text, sizeof text, "ampscope train %ld\n", (long)dead_pid());
    put_file(path, text);
    int fd;
    ck_assert_int_eq(rec_lock_take(dir, "train", true, &fd, NULL, msg, sizeof msg), AN_OK);
    snprintf(text, sizeof text, "ampscope train %ld\n", (long)getpid());
    assert_file(path, text);
    rec_lock_release(fd);
}
END_TEST

START_TEST(folder_kinds)
{
    char dir[80], path[128], sub[192], foreign[256];
    new_dir(dir, sizeof dir);
    path_in(path, sizeof path, dir, "none");
    ck_assert_int_eq(rec_folder_kind(path, NULL, 0), REC_FOLDER_ABSENT);
    write_text(dir, "file", "x");
    path_in(path, sizeof path, dir, "file");
    ck_assert_int_eq(rec_folder_kind(path, NULL, 0), REC_FOLDER_NOT_DIR);

    /* a training run, its temporary files and a study's files in it */
    path_in(path, sizeof path, dir, "run");
    mkdir(path, 0777);
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_EMPTY);
    write_text(path, ".ampscope.lock", "");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_EMPTY);
    write_text(path, "run.json", "{}");
    write_text(path, "steps.csv.tmp.123", "");
    write_text(path, "train.log", "");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_TRAIN);
    write_text(path, "steps.csv.tmp.x1", "");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_FOREIGN);
    ck_assert_str_eq(foreign, "steps.csv.tmp.x1");

    /* a sweep: its runs are training runs; a foreign file deep in one is named */
    path_in(path, sizeof path, dir, "sweep");
    mkdir(path, 0777);
    write_text(path, "sweep.json", "{}");
    path_in(sub, sizeof sub, path, "runs");
    mkdir(sub, 0777);
    path_in(sub, sizeof sub, path, "runs/0-a");
    mkdir(sub, 0777);
    write_text(sub, "steps.csv", "");
    write_text(sub, "done.json", "");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_SWEEP);
    write_text(sub, "notes.txt", "");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_FOREIGN);
    ck_assert_str_eq(foreign, "runs/0-a/notes.txt");

    /* a report, and reproduce's (a report with runs/) */
    path_in(path, sizeof path, dir, "rep");
    mkdir(path, 0777);
    write_text(path, "index.html", "");
    write_text(path, "loss.png", "");
    write_text(path, "loss.csv", "");
    path_in(sub, sizeof sub, path, "plots");
    mkdir(sub, 0777);
    write_text(sub, "lines.gp", "");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_REPORT);
    path_in(sub, sizeof sub, path, "runs");
    mkdir(sub, 0777);
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_REPRODUCE);
    /* the lock's kind wins: a report does not hold runs/ */
    write_text(path, ".ampscope.lock", "ampscope report 1\n");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_FOREIGN);
    ck_assert_str_eq(foreign, "runs");

    /* `inspect --plot`'s folder: a report's files, known by its lock only */
    path_in(path, sizeof path, dir, "insp");
    mkdir(path, 0777);
    write_text(path, "index.html", "");
    write_text(path, "hist_all.csv", "");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_REPORT);
    write_text(path, ".ampscope.lock", "ampscope inspect 1\n");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_INSPECT);
    ck_assert_int_eq(rec_folder_of_command("inspect"), REC_FOLDER_INSPECT);
    ck_assert_str_eq(rec_folder_name(REC_FOLDER_INSPECT), "an inspect folder");
    write_text(path, "weights.safetensors", "");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_FOREIGN);
    ck_assert_str_eq(foreign, "weights.safetensors");

    /* nothing ampscope knows */
    path_in(path, sizeof path, dir, "other");
    mkdir(path, 0777);
    write_text(path, "a.csv", "");
    ck_assert_int_eq(rec_folder_kind(path, foreign, sizeof foreign), REC_FOLDER_FOREIGN);
    ck_assert_str_eq(foreign, "a.csv");
    ck_assert_int_eq(rec_folder_of_command("sweep"), REC_FOLDER_SWEEP);
    ck_assert_int_eq(rec_folder_of_command("grad"), REC_FOLDER_FOREIGN);
    ck_assert_str_eq(rec_folder_name(REC_FOLDER_TRAIN), "a training run");
}
END_TEST

START_TEST(outputs_onto_inputs_and_into_records)
{
    char dir[80], run[128], ck[128], other[128], alias[128], out[192], msg[1024];
    new_dir(dir, sizeof dir);
    path_in(run, sizeof run, dir, "run");
    mkdir(run, 0777);
    write_text(run, "run.json", "{}");
    path_in(ck, sizeof ck, dir, "ck.safetensors");
    put_file(ck, "weights");
    /* the same inode by another name and another spelling */
    path_in(alias, sizeof alias, dir, "hard.safetensors");
    ck_assert_int_eq(link(ck, alias), 0);
    const rec_input init[] = {{"--init", ck}};
    ck_assert_int_eq(rec_check_output("--out", alias, NULL, init, 1, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "is --init");
    snprintf(out, sizeof out, "%s/./ck.safetensors", dir);
    ck_assert_int_eq(rec_check_output("--out", out, NULL, init, 1, msg, sizeof msg), AN_EINVAL);
    path_in(other, sizeof other, dir, "g.safetensors");
    ck_assert_int_eq(rec_check_output("--out", other, NULL, init, 1, msg, sizeof msg), AN_OK);

    /* inside an input folder, inside a run (also through a link to it) */
    const rec_input data[] = {{"--data", dir}};
    ck_assert_int_eq(rec_check_output("--out", other, NULL, data, 1, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "lies inside --data");
    snprintf(out, sizeof out, "%s/new/deeper", run);
    ck_assert_int_eq(rec_check_output("--out", out, NULL, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "lies inside a training run");
    path_in(alias, sizeof alias, dir, "to-run");
    ck_assert_int_eq(symlink(run, alias), 0);
    snprintf(out, sizeof out, "%s/x.csv", alias);
    ck_assert_int_eq(rec_check_output("--csv", out, NULL, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "--csv");
    /* the owner's folder is its own */
    path_in(other, sizeof other, dir, "sweep");
    mkdir(other, 0777);
    write_text(other, "sweep.json", "{}");
    snprintf(out, sizeof out, "%s/runs/0-a", other);
    ck_assert_int_eq(rec_check_output("--out", out, NULL, NULL, 0, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "lies inside a sweep folder");
    ck_assert_int_eq(rec_check_output("--out", out, other, NULL, 0, msg, sizeof msg), AN_OK);
}
END_TEST

static bool never(const char *dir, void *ctx, char *why, size_t len)
{
    (void)dir, (void)ctx;
    snprintf(why, len, "holds another sweep");
    return false;
}

START_TEST(take_out_dir)
{
    char dir[80], out[128], msg[1024], said[1024];
    new_dir(dir, sizeof dir);
    path_in(out, sizeof out, dir, "run");
    rec_out_dir o = {.option = "--out", .dir = out, .command = "train"};
    int fd;
    /* made, locked; a second taker is refused */
    ck_assert_int_eq(rec_take_out_dir(&o, &fd, said, sizeof said, msg, sizeof msg), AN_OK);
    ck_assert_str_eq(said, "");
    int fd2;
    ck_assert_int_eq(rec_take_out_dir(&o, &fd2, said, sizeof said, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "--out ");
    ASSERT_MSG(msg, "is in use by ampscope train");
    write_text(out, "run.json", "{}");
    write_text(out, "steps.csv", "step\n");
    rec_lock_release(fd);

    /* a run is not taken again by a new run; --force clears it and says so */
    ck_assert_int_eq(rec_take_out_dir(&o, &fd, said, sizeof said, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "already holds a run");
    o.force = true;
    o.resume = true;
    ck_assert_int_eq(rec_take_out_dir(&o, &fd, said, sizeof said, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "--force and --resume");
    o.resume = false;
    ck_assert_int_eq(rec_take_out_dir(&o, &fd, said, sizeof said, msg, sizeof msg), AN_OK);
    ASSERT_MSG(said, "--force: removed a training run in");
    ASSERT_MSG(said, "(2 entries: ");
    ck_assert_int_eq(dir_entries(out), 1); /* the lock */
    rec_lock_release(fd);

    /* foreign files: refused with --force too, nothing removed or left */
    write_text(out, "notes.txt", "mine");
    ck_assert_int_eq(rec_take_out_dir(&o, &fd, said, sizeof said, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "holds notes.txt, which ampscope did not write");
    ck_assert_int_eq(dir_entries(out), 2);

    /* a sweep that is not this one: the caller's reason, then the way out */
    char sweep[128];
    path_in(sweep, sizeof sweep, dir, "sweep");
    mkdir(sweep, 0777);
    write_text(sweep, "sweep.json", "{}");
    rec_out_dir s = {
        .option = "--out", .dir = sweep, .command = "sweep", .reuse = true, .compatible = never};
    ck_assert_int_eq(rec_take_out_dir(&s, &fd, said, sizeof said, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "holds another sweep, --force to replace it, or another --out");
    ck_assert_int_eq(dir_entries(sweep), 1); /* no lock file left */
    s.compatible = NULL;
    ck_assert_int_eq(rec_take_out_dir(&s, &fd, said, sizeof said, msg, sizeof msg), AN_OK);
    rec_lock_release(fd);

    /* a writer killed before its first file left only a temporary one: empty, and it goes */
    char killed[128];
    path_in(killed, sizeof killed, dir, "killed");
    mkdir(killed, 0777);
    write_text(killed, ".ampscope.lock", "ampscope train 1\n");
    write_text(killed, "run.json.tmp.77", "{");
    ck_assert_int_eq(rec_folder_kind(killed, NULL, 0), REC_FOLDER_EMPTY);
    rec_out_dir k = {.option = "--out", .dir = killed, .command = "train"};
    ck_assert_int_eq(rec_take_out_dir(&k, &fd, said, sizeof said, msg, sizeof msg), AN_OK);
    ck_assert_int_eq(dir_entries(killed), 1);
    rec_lock_release(fd);

    /* a missing parent is named, nothing is made */
    char deep[128];
    path_in(deep, sizeof deep, dir, "no/such");
    rec_out_dir d = {.option = "--out", .dir = deep, .command = "report"};
    ck_assert_int_eq(rec_take_out_dir(&d, &fd, said, sizeof said, msg, sizeof msg), AN_EINVAL);
    ASSERT_MSG(msg, "(make it first)");
    ck_assert_int_eq(dir_entries(dir), 3);
}
END_TEST

static Suite *record_lock_suite(void)
{
    Suite *s = suite_create("analyze_record_lock");
    TCase *tc = tcase_create("record_lock");
    tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
    tcase_add_test(tc, lock_text_and_second_writer);
    tcase_add_test(tc, lock_held_by_a_child_then_dead);
    tcase_add_test(tc, lock_stale_text);
    tcase_add_test(tc, folder_kinds);
    tcase_add_test(tc, outputs_onto_inputs_and_into_records);
    tcase_add_test(tc, take_out_dir);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return ts_run_suite(record_lock_suite()); }
