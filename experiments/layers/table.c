/* table.c: the layer table (layer.h), every kind of layer the nets may use.
 * The order is the order of the precision lists' op classes in messages. */
#include "layer.h"
#include "nets.h" /* net_layer */

#include <string.h>

const layer_kind *const layer_table[] = {&layer_linear,   &layer_conv2d, &layer_relu,
                                         &layer_maxpool2, &layer_gelu,   &layer_gelu_tanh,
                                         &layer_avgpool,  &layer_add};
const int layer_count = (int)(sizeof layer_table / sizeof layer_table[0]);
_Static_assert(sizeof layer_table / sizeof layer_table[0] <= LAYER_MAX_KINDS,
               "LAYER_MAX_KINDS is too small for the table");

const layer_kind *layer_find(const char *name)
{
    for (int i = 0; name && i < layer_count; i++)
        if (strcmp(layer_table[i]->name, name) == 0) return layer_table[i];
    return NULL;
}

int layer_index(const layer_kind *k)
{
    for (int i = 0; i < layer_count; i++)
        if (layer_table[i] == k) return i;
    return -1;
}

size_t layer_tensor_size(const layer_tensor *t)
{
    size_t n = 1;
    for (size_t d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

int layer_same_shape(net_layer *l)
{
    l->out_c = l->in_c;
    l->out_h = l->in_h;
    l->out_w = l->in_w;
    return 0;
}

int layer_no_tensors(const net_layer *l, layer_tensor t[LAYER_MAX_TENSORS])
{
    (void)l;
    (void)t;
    return 0;
}
