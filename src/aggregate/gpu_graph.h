/* aggregate: a CUDA graph replay's kernels charged to the lines that were
 * captured into the graph (docs/design-gpu.md, "CUDA graph replays").
 *
 * At capture (or when a node is added by hand), the backend notes each new
 * graph node's id with the stack of the launch it was made in; an
 * instantiate's clones take their original's stack. At join, a kernel
 * record naming a known node is charged to the replay call's stack, then a
 * "[graph replay]" marker (LP_OFFSET_GPU_GRAPH), then the captured stack's
 * frames: the captured line gets the time by the attribution rule, and the
 * replay line's function still holds it inclusively.
 *
 * Context: note and lookup from any thread (the capturing thread's API
 * callbacks, the runtime's buffer thread); a fixed table under a spin lock,
 * no malloc. A full table counts the nodes it could not keep; their
 * kernels stay on the replay line. Reset with the join (gpu_join.h). */
#ifndef LPROF_AGGREGATE_GPU_GRAPH_H
#define LPROF_AGGREGATE_GPU_GRAPH_H

#include <stdint.h>

#include "common/base.h"

/* Graph nodes kept (a power of two); the table has twice as many slots. */
#define LP_GPU_GRAPH_NODES (1u << 16)

/* Forget every node, grafted stack and counter (no join running). */
LP_INTERNAL void lp_gpu_graph_reset(void);
/* Node `node` (a backend's 64-bit id, 0 = none) was made by the launch or
 * node-adding call whose stack is `stack`; a node already known keeps its
 * stack (a clone noted first keeps its original's). */
LP_INTERNAL void lp_gpu_graph_node_created(uint64_t node, uint32_t stack);
/* Node `clone` was cloned from `original` (an instantiate): it takes the
 * original's stack, if the original has one. */
LP_INTERNAL void lp_gpu_graph_node_cloned(uint64_t clone, uint64_t original);
/* The stack noted for `node`, LP_STACK_NONE if none. */
LP_INTERNAL uint32_t lp_gpu_graph_node_stack(uint64_t node);
/* The stack a kernel of `node`, replayed from `replay` (the graph launch's
 * stack), is charged under: replay + "[graph replay]" + the node's captured
 * frames (the captured stack itself in *captured); LP_STACK_NONE when the
 * node has no stack (the caller keeps the replay stack). */
LP_INTERNAL uint32_t lp_gpu_graph_replay_stack(uint32_t replay, uint64_t node, uint32_t *captured);

typedef struct {
    uint64_t nodes;  /* nodes noted with a stack (clones included) */
    uint64_t full;   /* nodes not kept: the table was full */
    uint64_t joined; /* kernel records charged to a captured stack */
    uint64_t missed; /* graph kernel records whose node had no stack */
} lp_gpu_graph_stats;

LP_INTERNAL void lp_gpu_graph_get_stats(lp_gpu_graph_stats *out);

#endif
