/* transformer.c: the transformer runs the fp32-list, embedding and bf16
 * sections share, trained at the level's size (repro_net_plans): same seed,
 * same data order, only the precision options differ, so a finished run
 * serves every section that names it. */
#include "reproduce_internal.h"

int repro_train_tf2(repro_study *s, const char *name, const char *mode, const char *dtype,
                    const char *scale, const char *key, const char *value, const char *key2,
                    const char *value2)
{
    const repro_net_plan *p = &repro_net_plans[s->o->level];
    /* key NULL ends the options there */
    return repro_train(s, name, NULL, "net", "transformer", "width", p->tf_width, "depth",
                       p->tf_depth, "heads", p->tf_heads, "context", p->tf_context, "steps",
                       p->tf_steps, "lr", p->tf_lr, "mode", mode, "dtype", dtype, "loss-scale",
                       scale, "stats-every", p->stats_every, "hist-every", "0", "trace-every", "0",
                       "seed", "1", key, value, key ? key2 : NULL, value2, NULL);
}

int repro_train_tf(repro_study *s, const char *name, const char *mode, const char *dtype,
                   const char *scale, const char *key, const char *value)
{
    return repro_train_tf2(s, name, mode, dtype, scale, key, value, NULL, NULL);
}
