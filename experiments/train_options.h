/* train_options.h: train's options as data.  One table (topt_table) names
 * every option of a training run with its field, range and help; the
 * command line (app/cmd_train.c), a sweep's grid points and reproduce's runs
 * all fill a train_options through it, option by option, then finish it:
 *
 *     train_options o;
 *     train_options_default(&o);
 *     topt_set(&o, "net", "mlp", msg, len);   (each option by name, from its text)
 *     topt_set(&o, "lr", "0.01", msg, len);
 *     topt_finish(&o, msg, len);              (the defaults that depend on the rest)
 *     train_run(&o, msg, len);
 *
 * Numbers, paths and faults are checked when set; the precision mode, the
 * formats, the optimizer and the loss scaler when finished, in a fixed order
 * (the scaler's preset first, then its overrides, whatever order they came
 * in).  The texts given are kept in o->given (run.json records them) and
 * must outlive o.
 */
#ifndef AMPSCOPE_TRAIN_OPTIONS_H
#define AMPSCOPE_TRAIN_OPTIONS_H

#include <stddef.h>

#include "options.h"
#include "record.h"
#include "train.h"

/* Every option of a run, in the order of the help; ends with a NULL name. */
extern const opt_spec topt_table[];

/* Sets one option by name (without "--") from its text (NULL for a flag)
 * and keeps it in o->given.  0, or TRAIN_EINPUT with the reason in msg
 * ("unknown option '--NAME'", "--lr wants a number in (0, 1e+06], got 'x'"). */
int topt_set(train_options *o, const char *name, const char *text, char *msg, size_t msg_len);
/* The last text given for name, or NULL. */
const char *topt_given(const train_options *o, const char *name);
/* Resolves what depends on the rest: --out (or --resume DIR) is required;
 * mode and dtype, the statistics' format, the optimizer and its defaults for
 * the net, stochastic rounding, the lr left to the net's default, the loss
 * scaler (preset, then --scale, --scale-rule, --init-scale, --scale-factor,
 * --growth-factor, --backoff-factor, --scale-window, --hysteresis,
 * --consecutive-hysteresis, --min-scale, --max-scale,
 * --refuse-nonfinite-growth, --drop-overflow-update).  0, or TRAIN_EINPUT. */
int topt_finish(train_options *o, char *msg, size_t msg_len);

/* ---- the record (train_record_options.c) ----
 * run.json's "given" is o's options as given, argv-style ("--lr", "0.01";
 * --key=value and --key value alike; not --out, --resume, --force: they name
 * the folder); each entry of "resumes" the options a resume added and the
 * step from which they apply.  --resume DIR replays them in order:
 *
 *     topt_from_record(o, run, "DIR/run.json", msg, len);  (given, then each resume's)
 *     topt_set(o, "resume", "DIR", msg, len);
 *     topt_resume_set(o, "steps", "400", msg, len);        (each option given now)
 *     topt_finish(o, msg, len);
 *
 * A resume may extend --steps or --epochs (whichever the record's length
 * uses; never shorten it) and give --checkpoint-every and --no-progress; the
 * same value as recorded is accepted and changes nothing; anything else,
 * --out, --init or a second --resume is refused with TRAIN_EINPUT. */

/* Sets "given" in r from o, and each option's text in r's options (as the
 * argv scan took them: not a text starting with '-'). */
int topt_record(const train_options *o, rec_run *r, char *msg, size_t msg_len);
/* Appends to r's "resumes" the options given after the replayed ones
 * (o->n_recorded on), applying from step (nothing when there are none), and
 * sets their texts in r's options. */
int topt_record_resume(const train_options *o, rec_run *r, int64_t step, char *msg, size_t msg_len);
/* Replays r's "given" and "resumes" into o (path names r in messages); a
 * record without "given" cannot be resumed.  The texts stay r's: r must
 * outlive o.  Sets o->n_recorded.  0, or TRAIN_EINPUT. */
int topt_from_record(train_options *o, const rec_run *r, const char *path, char *msg,
                     size_t msg_len);
/* One option given with --resume, checked against the replayed record, then
 * set (topt_set) unless it changes nothing.  0, or TRAIN_EINPUT. */
int topt_resume_set(train_options *o, const char *name, const char *text, char *msg,
                    size_t msg_len);

#endif
