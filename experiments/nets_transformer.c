/* nets_transformer.c: `transformer`, a GPT-style decoder-only language
 * model over the fortunes text's 98 character tokens (data.h), with the
 * module names of nanoGPT's GPT (without its "transformer." prefix):
 *     wte (token embedding), wpe (learned positions), [drop],
 *     depth x pre-LN block h.<i>:
 *         x = x + attn.c_proj(attention(attn.c_attn(ln_1(x)))) [resid drop]
 *         x = x + mlp.c_proj(gelu(mlp.c_fc(ln_2(x))))           [resid drop]
 *     ln_f, lm_head (bias=False; not tied to wte),
 * cross-entropy of every position's next token.  Sizes: width (n_embd,
 * default 64), depth (n_layer, 2), heads (n_head, 4), context (block_size,
 * 64), dropout (0: no dropout layers; nanoGPT's attention-probability
 * dropout is not modelled).  The exact GELU (nn.GELU()), LayerNorm eps
 * 1e-5, Linear layers with bias as nanoGPT's bias=True. */
#include "atomic_file.h" /* ut_fail */
#include "data.h"        /* DS_TEXT_VOCAB */
#include "nets_internal.h"

#include <string.h>

static net_layer sized(size_t out_c)
{
    net_layer h;
    memset(&h, 0, sizeof h);
    h.out_c = out_c;
    return h;
}

/* A dropout layer after x when p > 0; returns the output's index. */
static int maybe_drop(net_def *net, int x, double p, char *msg, size_t len, const char *name)
{
    if (p <= 0 || x < 0) return x;
    net_layer h = sized(0);
    h.p = p;
    return net_add_layer(net, &layer_dropout, x, NET_NO_INPUT, &h, msg, len, "%s", name);
}

static int block(net_def *net, int x, int i, size_t c, size_t heads, double p, char *msg,
                 size_t len)
{
    const net_layer none = sized(0);
    net_layer core = none;
    core.heads = heads;
    char drop[NET_NAME_LEN];
    int y = net_add_layer(net, &layer_layernorm, x, NET_NO_INPUT, &none, msg, len, "h.%d.ln_1", i);
    if (y >= 0) {
        const net_layer qkv = sized(3 * c);
        y = net_add_layer(net, &layer_linear, y, NET_NO_INPUT, &qkv, msg, len, "h.%d.attn.c_attn",
                          i);
    }
    if (y >= 0)
        y = net_add_layer(net, &layer_attention, y, NET_NO_INPUT, &core, msg, len, "h.%d.attn.core",
                          i);
    if (y >= 0) {
        const net_layer proj = sized(c);
        y = net_add_layer(net, &layer_linear, y, NET_NO_INPUT, &proj, msg, len, "h.%d.attn.c_proj",
                          i);
    }
    snprintf(drop, sizeof drop, "h.%d.attn.drop", i);
    y = maybe_drop(net, y, p, msg, len, drop);
    if (y >= 0) y = net_add_layer(net, &layer_add, y, x, &none, msg, len, "h.%d.add_1", i);
    const int mid = y;
    if (y >= 0)
        y = net_add_layer(net, &layer_layernorm, y, NET_NO_INPUT, &none, msg, len, "h.%d.ln_2", i);
    if (y >= 0) {
        const net_layer fc = sized(4 * c);
        y = net_add_layer(net, &layer_linear, y, NET_NO_INPUT, &fc, msg, len, "h.%d.mlp.c_fc", i);
    }
    if (y >= 0)
        y = net_add_layer(net, &layer_gelu, y, NET_NO_INPUT, &none, msg, len, "h.%d.mlp.gelu", i);
    if (y >= 0) {
        const net_layer proj = sized(c);
        y = net_add_layer(net, &layer_linear, y, NET_NO_INPUT, &proj, msg, len, "h.%d.mlp.c_proj",
                          i);
    }
    snprintf(drop, sizeof drop, "h.%d.mlp.drop", i);
    y = maybe_drop(net, y, p, msg, len, drop);
    if (y >= 0) y = net_add_layer(net, &layer_add, y, mid, &none, msg, len, "h.%d.add_2", i);
    return y;
}

int net_build_transformer(net_def *net, const net_size *size, char *msg, size_t msg_len)
{
    const size_t c = size && size->width ? size->width : 64;
    const int depth = size && size->depth ? size->depth : 2;
    const size_t heads = size && size->heads ? size->heads : 4;
    const size_t context = size && size->context ? size->context : 64;
    const double p = size ? size->dropout : 0;
    if (c > 1024 || c % heads)
        return ut_fail(msg, msg_len, -1,
                       "--width %zu: the transformer wants at most 1024 features, a multiple of "
                       "--heads %zu",
                       c, heads);
    if (depth < 1 || depth > 8)
        return ut_fail(msg, msg_len, -1, "--depth %d is out of range for the transformer (1 to 8)",
                       depth);
    if (context < 2 || context > 1024)
        return ut_fail(msg, msg_len, -1, "--context %zu is out of range (2 to 1024)", context);
    if (!(p >= 0 && p < 1))
        return ut_fail(msg, msg_len, -1, "--dropout %g is out of range ([0, 1))", p);
    net->in_c = 1;
    net->in_h = context;
    net->in_w = 1;
    net->tokens = context;
    net->loss = NET_XENT;
    net_layer emb = sized(c);
    emb.vocab = DS_TEXT_VOCAB;
    const net_layer none = sized(0);
    int x =
        net_add_layer(net, &layer_embedding, NET_INPUT, NET_NO_INPUT, &emb, msg, msg_len, "wte");
    if (x >= 0)
        x = net_add_layer(net, &layer_posembed, x, NET_NO_INPUT, &none, msg, msg_len, "wpe");
    x = maybe_drop(net, x, p, msg, msg_len, "drop");
    for (int i = 0; i < depth && x >= 0; i++)
        x = block(net, x, i, c, heads, p, msg, msg_len);
    if (x >= 0)
        x = net_add_layer(net, &layer_layernorm, x, NET_NO_INPUT, &none, msg, msg_len, "ln_f");
    net_layer head = sized(DS_TEXT_VOCAB);
    head.flags = NET_NO_BIAS;
    if (x >= 0)
        x = net_add_layer(net, &layer_linear, x, NET_NO_INPUT, &head, msg, msg_len, "lm_head");
    return x >= 0 ? 0 : -1;
}
