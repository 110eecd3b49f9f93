/* collect: the calling thread's frames and each one's function, read from
 * the unwind tables (.eh_frame) through the C runtime's own unwinder
 * (libgcc's _Unwind_Backtrace and _Unwind_Find_FDE). Used once at start to
 * find the eval loop's parts; unlike libunwind 1.6, whose first use opens a
 * pipe for its memory checks, it holds no file descriptor, so a program
 * that lists its descriptors sees none of lprof's (libunwind is loaded
 * only for --native). Not signal-safe. */
#ifndef LPROF_COLLECT_EH_FRAMES_H
#define LPROF_COLLECT_EH_FRAMES_H

#include <stdint.h>

#include "common/base.h"

typedef struct {
    uintptr_t ip;         /* return address into this frame (the first: inside lp_eh_frames_here's caller) */
    uintptr_t sp;         /* its stack pointer at that call: the lowest address it owns */
    uintptr_t start, end; /* the function around ip, [start, end); 0/0 where the tables do not say */
} lp_eh_frame;

/* Frames from the caller of lp_eh_frames_here outward: frame i's stack
 * spans [sp of frame i, sp of frame i+1). Returns how many were written. */
LP_INTERNAL int lp_eh_frames_here(lp_eh_frame *out, int max);

/* The function (one FDE: a hot/cold split function has one per part) that
 * holds pc: 0 with [*start, *end), -1 where no unwind table covers pc or
 * its encoding is one lprof does not read. */
LP_INTERNAL int lp_eh_function_range(uintptr_t pc, uintptr_t *start, uintptr_t *end);

#endif
