/* export: the profile of a program that dies by a signal. Pure C, no Python.
 *
 * SIGTERM (when its disposition is the default one): the handler only records
 * it and posts a semaphore; lprof's watcher thread (lp_emergency_wait) wakes, saves
 * the full profile from Python, and calls lp_emergency_die(), so the process
 * still ends as killed by SIGTERM. A second SIGTERM before that kills at once.
 *
 * Fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): the program's state
 * may be corrupt, so no Python runs. The handler writes the last checkpoint
 * (an encoded profile the watcher hands over every few seconds) to the
 * output file, atomically (temporary name, then rename), says so on fd 2,
 * then gives the signal to the handler that was there before (the default:
 * the process dies by that signal, as without lprof).
 *
 * Only in the process that armed it: a forked child gets the previous
 * behaviour (the default action), never the parent's watcher or file. lprof
 * holds no file descriptor for any of this: a program that lists, closes or
 * reuses descriptors sees and touches none of lprof's. */
#ifndef LPROF_EXPORT_EMERGENCY_H
#define LPROF_EXPORT_EMERGENCY_H

#include <stddef.h>

#include "common/base.h"

enum {
    LP_EMERGENCY_TERM = 1,  /* handle SIGTERM (where its disposition is the default) */
    LP_EMERGENCY_QUIET = 2, /* write nothing on fd 2 (-q, a followed child) */
};

/* flags: LP_EMERGENCY_*. path / tmp_path: the profile file and the
 * temporary name written first. mode: the file's permission bits. Returns 0,
 * or -1 with errno set. */
LP_INTERNAL int lp_emergency_arm(unsigned flags, const char *path, const char *tmp_path, unsigned mode);
/* Restores each previous handler where ours is still installed. */
LP_INTERNAL void lp_emergency_disarm(void);
/* Copies an encoded profile as the one a fatal signal writes. -1 on
 * out-of-memory or when a fatal signal is already being handled. Called by one
 * thread at a time (the caller serialises). */
LP_INTERNAL int lp_emergency_checkpoint(const void *data, size_t len);
/* The watcher's wait: the SIGTERM received (its number), 0 when timeout_s
 * passed first (timeout_s < 0: no timeout), -1 once lp_emergency_release
 * was called (the run is ending) or where no semaphore could be made. */
LP_INTERNAL int lp_emergency_wait(double timeout_s);
/* Wakes the watcher for good: its lp_emergency_wait returns -1. */
LP_INTERNAL void lp_emergency_release(void);
/* The SIGTERM received so far (0: none). */
LP_INTERNAL int lp_emergency_pending(void);
/* What hands the save the GIL when the watcher cannot wait for the signal
 * (it is inside a checkpoint, itself waiting for the GIL): relay(signal)
 * returns 0 once it has asked for that, -1 to be called again later. Set
 * once, before arming. */
LP_INTERNAL void lp_emergency_set_relay(int (*relay)(int sig));
/* Any thread, GIL or not, not a signal handler: a SIGTERM received and not
 * relayed yet goes to the relay, once per arming (the watcher on waking,
 * the relay thread emergency.c starts, woken by the SIGTERM handler). */
LP_INTERNAL void lp_emergency_relay_term(void);
/* Before arming: a fatal signal also writes "<signal> <age of the profile
 * written in ms, or -1: none>\n" to path (NULL: no note). A followed child's
 * death, told to the lprof command (process/follow.py). 0, or -1 (armed,
 * path too long). */
LP_INTERNAL int lp_emergency_note(const char *path);
/* Ends the process by `sig` with its default action (from any thread). */
LP_INTERNAL void lp_emergency_die(int sig);

#endif
