/* nets_resnet.c: `resnet`, a small ResNet for Fashion-MNIST's 28 x 28
 * images in the CIFAR style of He et al. 2016 (section 4.2) with
 * torchvision's BasicBlock and names: a 3x3 stem conv (conv1, bn1), three
 * stages (layer1..layer3) of `depth` basic blocks with width, 2 width and
 * 4 width channels, the first block of stages 2 and 3 at stride 2 with a
 * 1x1 conv + BatchNorm shortcut (downsample.0, downsample.1), global
 * average pooling and a Linear head (fc) to the 10 classes.  Convolutions
 * have no bias (BatchNorm follows each).  Default width 16, depth 1
 * (ResNet-8); the activations of a block are conv1 bn1 relu conv2 bn2,
 * added to the shortcut, then relu. */
#include "atomic_file.h" /* ut_fail */
#include "nets_internal.h"

#include <string.h>

#define RESNET_CLASSES 10

static net_layer conv_hyper(size_t out_c, size_t kernel, size_t stride)
{
    net_layer h;
    memset(&h, 0, sizeof h);
    h.out_c = out_c;
    h.kernel = kernel;
    h.stride = stride;
    h.pad = kernel / 2;
    h.flags = NET_NO_BIAS;
    return h;
}

/* One BasicBlock reading layer x; returns the index of its output. */
static int basic_block(net_def *net, int x, int stage, int block, size_t width, size_t stride,
                       char *msg, size_t msg_len)
{
    const net_layer none = {0}, c1 = conv_hyper(width, 3, stride), c2 = conv_hyper(width, 3, 1);
    const int s = stage, b = block;
    int i = net_add_layer(net, &layer_conv2d, x, NET_NO_INPUT, &c1, msg, msg_len,
                          "layer%d.%d.conv1", s, b);
    if (i >= 0)
        i = net_add_layer(net, &layer_batchnorm2d, i, NET_NO_INPUT, &none, msg, msg_len,
                          "layer%d.%d.bn1", s, b);
    if (i >= 0)
        i = net_add_layer(net, &layer_relu, i, NET_NO_INPUT, &none, msg, msg_len,
                          "layer%d.%d.relu1", s, b);
    if (i >= 0)
        i = net_add_layer(net, &layer_conv2d, i, NET_NO_INPUT, &c2, msg, msg_len,
                          "layer%d.%d.conv2", s, b);
    if (i >= 0)
        i = net_add_layer(net, &layer_batchnorm2d, i, NET_NO_INPUT, &none, msg, msg_len,
                          "layer%d.%d.bn2", s, b);
    int shortcut = x;
    const size_t in_c = x >= 0 ? net->layers[x].out_c : net->in_c;
    if (i >= 0 && (stride != 1 || in_c != width)) {
        const net_layer d = conv_hyper(width, 1, stride);
        shortcut = net_add_layer(net, &layer_conv2d, x, NET_NO_INPUT, &d, msg, msg_len,
                                 "layer%d.%d.downsample.0", s, b);
        if (shortcut >= 0)
            shortcut = net_add_layer(net, &layer_batchnorm2d, shortcut, NET_NO_INPUT, &none, msg,
                                     msg_len, "layer%d.%d.downsample.1", s, b);
        if (shortcut < 0) return -1;
    }
    if (i >= 0)
        i = net_add_layer(net, &layer_add, i, shortcut, &none, msg, msg_len, "layer%d.%d.add", s,
                          b);
    if (i >= 0)
        i = net_add_layer(net, &layer_relu, i, NET_NO_INPUT, &none, msg, msg_len,
                          "layer%d.%d.relu2", s, b);
    return i;
}

int net_build_resnet(net_def *net, const net_size *size, char *msg, size_t msg_len)
{
    const size_t width = size && size->width ? size->width : 16;
    const int depth = size && size->depth ? size->depth : 1;
    if (width > 256)
        return ut_fail(msg, msg_len, -1, "--width %zu is too large for resnet (at most 256)",
                       width);
    if (depth < 1 || depth > 4)
        return ut_fail(msg, msg_len, -1,
                       "--depth %d is out of range for resnet (1 to 4 blocks a stage)", depth);
    net->in_c = 1;
    net->in_h = net->in_w = 28;
    net->loss = NET_XENT;
    const net_layer none = {0}, stem = conv_hyper(width, 3, 1);
    int x =
        net_add_layer(net, &layer_conv2d, NET_INPUT, NET_NO_INPUT, &stem, msg, msg_len, "conv1");
    if (x >= 0)
        x = net_add_layer(net, &layer_batchnorm2d, x, NET_NO_INPUT, &none, msg, msg_len, "bn1");
    if (x >= 0) x = net_add_layer(net, &layer_relu, x, NET_NO_INPUT, &none, msg, msg_len, "relu");
    for (int stage = 1; stage <= 3 && x >= 0; stage++)
        for (int block = 0; block < depth && x >= 0; block++)
            x = basic_block(net, x, stage, block, width << (stage - 1),
                            stage > 1 && block == 0 ? 2 : 1, msg, msg_len);
    if (x >= 0)
        x = net_add_layer(net, &layer_avgpool, x, NET_NO_INPUT, &none, msg, msg_len, "avgpool");
    net_layer fc = none;
    fc.out_c = RESNET_CLASSES;
    if (x >= 0) x = net_add_layer(net, &layer_linear, x, NET_NO_INPUT, &fc, msg, msg_len, "fc");
    return x >= 0 ? 0 : -1;
}
