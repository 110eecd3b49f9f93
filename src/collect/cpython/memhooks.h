/* collect: memory events into the account. PyMem_SetAllocator hooks on the
 * MEM and OBJ domains (and RAW when no shim is preloaded), the shim's
 * callbacks (include/lprof/shim.h), one count per byte (the shim's guard is
 * set around each call into the wrapped allocator), stack capture with
 * collect/cpython/frames.h, interning with agg, and the account (aggregate/memacct.h).
 * Start/stop/read functions run with the GIL held. */
#ifndef LPROF_PYMEMHOOKS_H
#define LPROF_PYMEMHOOKS_H

#include <stdint.h>

#include "common/base.h"
#include "aggregate/memacct.h"
#include "collect/shim/shared/livemem.h"
#include "lprof/shim.h"

#define LP_MEM_MAX_DEPTH  128
#define LP_MEM_MAX_NATIVE 128 /* native frames per sampled allocation (--native) */

/* Finds the preloaded shim (module import, before any thread of lprof's). */
LP_INTERNAL void lp_memhooks_init(void);
/* Installs hooks (once), clears the account and enables attribution.
 * 0, or -1 with a Python exception. */
LP_INTERNAL int lp_memhooks_start(uint64_t sample_bytes);
/* Disables attribution and detaches from the shim; idempotent. */
LP_INTERNAL void lp_memhooks_stop(void);
LP_INTERNAL int lp_memhooks_running(void);
/* The shim's API when it is preloaded, else NULL. */
LP_INTERNAL const lp_shim_api *lp_memhooks_shim(void);
LP_INTERNAL lp_memacct *lp_memhooks_acct(void);
/* Sampled live blocks of the PyMem domains (the shim keeps native ones). */
LP_INTERNAL lp_livemem *lp_memhooks_live(void);
LP_INTERNAL uint64_t lp_memhooks_sample_bytes(void);
/* The reentrancy guard (shim's when preloaded): set it while lprof itself
 * allocates so that its own allocations are not sampled. */
LP_INTERNAL int lp_memhooks_guard_enter(void);
LP_INTERNAL void lp_memhooks_guard_leave(int previous);

#endif
