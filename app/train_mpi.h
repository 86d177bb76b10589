/* train_mpi.h: the ranks of an MPI launch for `ampscope train` (train_mpi.c). */
#ifndef AMPSCOPE_TRAIN_MPI_H
#define AMPSCOPE_TRAIN_MPI_H

#include <stdbool.h>
#include <stddef.h>

#include "train.h"

/* Started by an MPI launcher with more than one rank: MPI_Init, and c the world's ranks
 * (*started true); otherwise nothing (c->size 0: one process).  Without MPI built in, a
 * launch of several ranks is refused.  0, or -1 with a message. */
int train_mpi_begin(train_comm *c, bool *started, char *msg, size_t len);
void train_mpi_end(bool started); /* MPI_Finalize when started */

#endif
