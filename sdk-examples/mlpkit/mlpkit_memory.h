/* mlpkit's own memory resource (internal): a budgeted, counting host
 * allocator written in C and handed to shapeml as a shapeml_memory_resource. */
#ifndef MLPKIT_MEMORY_H_
#define MLPKIT_MEMORY_H_

#include "mlpkit.h"
#include "shapeml.h"

/* A new shapeml_memory over mlpkit's allocator with at most `budget` bytes
 * in use (0: unlimited). `*state_out` receives a borrowed pointer to the
 * resource's counters, valid as long as the returned memory lives. */
shapeml_status* mlpkit_memory_create(uint64_t budget, shapeml_memory** out, const void** state_out);

/* Reads the counters of a state from mlpkit_memory_create. */
void mlpkit_memory_read(const void* state, mlpkit_memory_stats* out);

#endif
