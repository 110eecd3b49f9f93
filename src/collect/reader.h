/* collect: how the frame walker reads memory that may be half written or
 * unmapped (another thread's frames, an interrupted stack). The sampler
 * (collect/sampler.c) hands a reader to the walker it was given at start;
 * the readers themselves live with the walker (collect/cpython/frames.c). */
#ifndef LPROF_COLLECT_READER_H
#define LPROF_COLLECT_READER_H

#include <stddef.h>

/* Copies n bytes from src to dst; 0 on success, -1 if unreadable. NULL
 * reader = plain loads (the caller's own, live thread). */
typedef int (*lp_reader)(void *dst, const void *src, size_t n);

#endif
