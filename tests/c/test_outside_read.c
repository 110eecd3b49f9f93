/* outside_read: a code object's death waits for a read in progress, and
 * the read drops itself only if it names that code (collect/outside_read.h).
 * The dying side runs on a thread of its own, as the interpreter's
 * destruction hook does beside lprof's sampler thread. */
#include <pthread.h>
#include <time.h>

#include "harness.h"
#include "collect/outside_read.h"

static int code_a, code_b; /* their addresses are the fake code objects */
static int death_returned;

static void *dies(void *arg) {
    lp_outside_code_dying(arg);
    __atomic_store_n(&death_returned, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void pause_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

TEST(a_death_during_a_read_waits_for_it_and_drops_only_a_read_naming_it) {
    lp_rawframe with_a[2] = {{&code_b, 10, 0}, {&code_a, 20, 0}};
    lp_rawframe without_a[1] = {{&code_b, 10, 0}};
    lp_outside_begin();
    CHECK(lp_outside_unchanged(with_a, 2)); /* no death yet */
    pthread_t th;
    __atomic_store_n(&death_returned, 0, __ATOMIC_SEQ_CST);
    REQUIRE(pthread_create(&th, NULL, dies, &code_a) == 0);
    /* the death is seen once the other thread has published it */
    int seen = 0;
    for (int i = 0; i < 5000 && !seen; i++) {
        if (!lp_outside_unchanged(with_a, 2)) seen = 1;
        else pause_ms(1);
    }
    CHECK(seen);
    CHECK(lp_outside_unchanged(without_a, 1)); /* another code's death does not matter */
    pause_ms(20);
    CHECK(!__atomic_load_n(&death_returned, __ATOMIC_SEQ_CST)); /* it waits for the read */
    lp_outside_end();
    pthread_join(th, NULL);
    CHECK(__atomic_load_n(&death_returned, __ATOMIC_SEQ_CST));
    /* a read that begins after the death does not see it */
    lp_outside_begin();
    CHECK(lp_outside_unchanged(with_a, 2));
    lp_outside_end();
}

TEST(without_a_read_in_progress_a_death_does_not_wait) {
    __atomic_store_n(&death_returned, 0, __ATOMIC_SEQ_CST);
    dies(&code_b);
    CHECK(__atomic_load_n(&death_returned, __ATOMIC_SEQ_CST));
}

RUN_TESTS(a_death_during_a_read_waits_for_it_and_drops_only_a_read_naming_it,
          without_a_read_in_progress_a_death_does_not_wait)
