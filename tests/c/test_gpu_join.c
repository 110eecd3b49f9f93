/* GPU aggregation on synthetic records: launches noted per correlation id,
 * activity records joined to their launch stack as named leaves with device
 * time and bytes; eviction, incomplete and unknown records; concurrent
 * noting and joining; the device memory account's peak replay; the name
 * arena's interning; CUDA graph replays charged to their captured stacks. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "aggregate/agg.h"
#include "aggregate/gpu_devmem.h"
#include "aggregate/gpu_graph.h"
#include "aggregate/gpu_join.h"
#include "aggregate/gpu_names.h"
#include "harness.h"

static int64_t col(uint32_t stack, lp_metric m) {
    int64_t v[LP_M_COUNT];
    lp_stacktab_get(lp_agg_stacks(), stack, v);
    return v[m];
}

static uint32_t launch_stack(uint64_t thread, uintptr_t code) {
    lp_rawframe f[2] = {{(void *)code, 10, 0}, {(void *)0x9000, 4, 0}};
    return lp_agg_intern(thread, f, 2, 0);
}

static void fresh(void) {
    REQUIRE(lp_agg_init() == 0);
    lp_agg_reset();
    lp_gpu_join_reset();
}

TEST(names_are_interned_once) {
    const char *a = lp_gpu_name("_Z6kernelv", 10);
    const char *b = lp_gpu_name("_Z6kernelvEXTRA", 10);
    const char *c = lp_gpu_name("other\0tail", 10);
    REQUIRE(a != NULL && c != NULL);
    CHECK(a == b);
    CHECK(strcmp(a, "_Z6kernelv") == 0);
    CHECK(strcmp(c, "other") == 0);
    CHECK(a != c);
    char big[LP_GPU_NAME_MAX + 50];
    memset(big, 'k', sizeof big);
    const char *cut = lp_gpu_name(big, sizeof big);
    REQUIRE(cut != NULL);
    CHECK_EQ_INT(strlen(cut), LP_GPU_NAME_MAX);
}

TEST(collective_kernels_are_communication) {
    /* NCCL's names before and after 2.19, mangled, demangled, namespaced;
     * oneCCL's Level Zero kernels; and names that only look alike */
    CHECK(lp_gpu_name_is_comm("ncclKernel_AllReduce_RING_LL_Sum_float"));
    CHECK(lp_gpu_name_is_comm("_Z31ncclDevKernel_AllGather_RING_LLv"));
    CHECK(lp_gpu_name_is_comm("_ZN2ns11ncclDevFuncEv"));
    CHECK(lp_gpu_name_is_comm("void ncclKernel_X<int>(int)"));
    CHECK(lp_gpu_name_is_comm("ns::ncclDevKernel_X(int)"));
    CHECK(lp_gpu_name_is_comm("allreduce_execution_float32_sum"));
    CHECK(lp_gpu_name_is_comm("reduce_scatter_execution_int8_max"));
    CHECK(!lp_gpu_name_is_comm("gemm_kernel"));
    CHECK(!lp_gpu_name_is_comm("my_ncclKernel"));
    CHECK(!lp_gpu_name_is_comm("_Z40ncclDevKernel")); /* length past the end */
    CHECK(!lp_gpu_name_is_comm("_Z"));
    CHECK(!lp_gpu_name_is_comm(""));
    CHECK(!lp_gpu_name_is_comm(NULL));
    fresh();
    uint32_t s = launch_stack(1, 0x3000);
    lp_gpu_join_note_launch(21, s);
    lp_gpu_join_note_launch(22, s);
    lp_gpu_activity nccl = {
        LP_GPU_KERNEL, 21, 1000, 1700, 0, LP_GPU_DIR_OTHER, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0};
    lp_gpu_activity gemm = {LP_GPU_KERNEL, 22, 2000, 2100, 0, LP_GPU_DIR_OTHER, "gemm_kernel", 0};
    uint32_t a = lp_gpu_join_add(&nccl), b = lp_gpu_join_add(&gemm);
    REQUIRE(a != LP_STACK_NONE && b != LP_STACK_NONE && a != b);
    CHECK_EQ_INT(col(a, LP_M_GPU_KERNEL), 700);
    CHECK_EQ_INT(col(a, LP_M_GPU_COMM), 700);
    CHECK_EQ_INT(col(b, LP_M_GPU_KERNEL), 100);
    CHECK_EQ_INT(col(b, LP_M_GPU_COMM), 0);
}

TEST(backward_work_counts_as_backward) {
    /* work launched under the "[backward]" marker (a forward line's stack,
     * collect/cpython/gpu.c) adds its time, kernel or copy, to GPU_BACKWARD
     * too; the same work launched from the stack itself does not */
    fresh();
    uint32_t fwd = launch_stack(1, 0x3000);
    uint32_t bwd = lp_agg_extend(fwd, NULL, LP_OFFSET_GPU_BACKWARD);
    REQUIRE(bwd != LP_STACK_OVERFLOW && bwd != fwd);
    lp_gpu_join_note_launch(31, bwd);
    lp_gpu_join_note_launch(32, bwd);
    lp_gpu_join_note_launch(33, fwd);
    lp_gpu_activity k = {LP_GPU_KERNEL, 31, 1000, 1400, 0, LP_GPU_DIR_OTHER, "bwd_kernel", 0};
    lp_gpu_activity c = {LP_GPU_MEMCPY, 32, 2000, 2050, 4096, LP_GPU_DIR_D2H, NULL, 0};
    lp_gpu_activity f = {LP_GPU_KERNEL, 33, 3000, 3100, 0, LP_GPU_DIR_OTHER, "bwd_kernel", 0};
    uint32_t a = lp_gpu_join_add(&k), b = lp_gpu_join_add(&c), d = lp_gpu_join_add(&f);
    REQUIRE(a != LP_STACK_NONE && b != LP_STACK_NONE && d != LP_STACK_NONE && a != d);
    CHECK_EQ_INT(col(a, LP_M_GPU_KERNEL), 400);
    CHECK_EQ_INT(col(a, LP_M_GPU_BACKWARD), 400);
    CHECK_EQ_INT(col(b, LP_M_GPU_COPY), 50);
    CHECK_EQ_INT(col(b, LP_M_GPU_BACKWARD), 50);
    CHECK_EQ_INT(col(d, LP_M_GPU_KERNEL), 100);
    CHECK_EQ_INT(col(d, LP_M_GPU_BACKWARD), 0);
}

TEST(kernel_and_copies_join_their_launch) {
    fresh();
    uint32_t s1 = launch_stack(1, 0x1000), s2 = launch_stack(1, 0x2000);
    lp_gpu_join_note_launch(7, s1);
    lp_gpu_join_note_launch(8, s2);
    lp_gpu_activity k = {LP_GPU_KERNEL, 7, 1000, 4000, 0, LP_GPU_DIR_OTHER, "gemm_kernel", 0};
    uint32_t leaf = lp_gpu_join_add(&k);
    REQUIRE(leaf != LP_STACK_NONE && leaf != LP_STACK_OVERFLOW);
    lp_stacknode n = lp_stacktab_node(lp_agg_stacks(), leaf);
    CHECK(n.parent == s1);
    CHECK(n.offset == LP_OFFSET_GPU_OP);
    CHECK(strcmp((const char *)n.code, "gemm_kernel") == 0);
    /* a graph or library call: several records, one correlation id */
    CHECK(lp_gpu_join_add(&k) == leaf);
    CHECK_EQ_INT(col(leaf, LP_M_GPU_KERNEL), 6000);
    CHECK_EQ_INT(col(leaf, LP_M_GPU_KERNELS), 2);
    lp_gpu_activity c = {LP_GPU_MEMCPY, 8, 5000, 5500, 4096, LP_GPU_DIR_H2D, NULL, 0};
    uint32_t cl = lp_gpu_join_add(&c);
    c.dir = LP_GPU_DIR_D2H;
    c.bytes = 100;
    uint32_t dl = lp_gpu_join_add(&c);
    CHECK(lp_stacktab_node(lp_agg_stacks(), cl).parent == s2);
    CHECK(strcmp((const char *)lp_stacktab_node(lp_agg_stacks(), cl).code, "[memcpy HtoD]") == 0);
    CHECK(strcmp((const char *)lp_stacktab_node(lp_agg_stacks(), dl).code, "[memcpy DtoH]") == 0);
    CHECK_EQ_INT(col(cl, LP_M_GPU_H2D), 4096);
    CHECK_EQ_INT(col(dl, LP_M_GPU_D2H), 100);
    CHECK_EQ_INT(col(cl, LP_M_GPU_COPY), 500);
    CHECK_EQ_INT(col(cl, LP_M_GPU_KERNEL), 0);
    lp_gpu_join_stats st;
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.records, 4);
    CHECK_EQ_INT(st.unattributed, 0);
    CHECK_EQ_INT(st.launches, 2);
    CHECK_EQ_INT(st.device_ns, 7000);
    CHECK_EQ_INT(st.first_start_ns, 1000);
    CHECK_EQ_INT(st.last_end_ns, 5500);
}

TEST(unknown_and_incomplete_records) {
    fresh();
    uint32_t s1 = launch_stack(1, 0x1000);
    lp_gpu_join_note_launch(5, s1);
    lp_gpu_activity k = {LP_GPU_KERNEL, 77, 10, 20, 0, LP_GPU_DIR_OTHER, "k", 0}; /* never launched */
    uint32_t leaf = lp_gpu_join_add(&k);
    REQUIRE(leaf != LP_STACK_NONE);
    lp_stacknode n = lp_stacktab_node(lp_agg_stacks(), leaf);
    lp_stacknode marker = lp_stacktab_node(lp_agg_stacks(), n.parent);
    CHECK(marker.offset == LP_OFFSET_GPU_OP);
    CHECK(strcmp((const char *)marker.code, "[GPU work without a launch record]") == 0);
    CHECK_EQ_INT(lp_stacktab_thread(lp_agg_stacks(), leaf), 0);
    CHECK_EQ_INT(col(leaf, LP_M_GPU_KERNEL), 10);
    lp_gpu_activity bad = {LP_GPU_KERNEL, 5, 0, 0, 0, LP_GPU_DIR_OTHER, "k", 0};
    CHECK(lp_gpu_join_add(&bad) == LP_STACK_NONE);
    bad.start_ns = 50;
    bad.end_ns = 40;
    CHECK(lp_gpu_join_add(&bad) == LP_STACK_NONE);
    lp_gpu_join_stats st;
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.records, 1);
    CHECK_EQ_INT(st.unattributed, 1);
    CHECK_EQ_INT(st.incomplete, 2);
}

/* CUDA 13's per-thread buffers: a record may come back after its ring slot
 * was reused by 2^18 later launches; the launch waits for it. */
TEST(late_records_keep_their_launch) {
    fresh();
    uint32_t s1 = launch_stack(1, 0x1000), s2 = launch_stack(2, 0x3000);
    lp_gpu_join_note_launch(5, s1);
    lp_gpu_join_note_launch(5 + LP_GPU_CORR_SLOTS, s2); /* same slot */
    CHECK(lp_gpu_join_lookup(5) == s1);
    CHECK(lp_gpu_join_lookup(5 + LP_GPU_CORR_SLOTS) == s2);
    lp_gpu_activity k = {LP_GPU_KERNEL, 5, 10, 20, 0, LP_GPU_DIR_OTHER, "k", 0};
    uint32_t leaf = lp_gpu_join_add(&k);
    REQUIRE(leaf != LP_STACK_NONE);
    CHECK(lp_stacktab_node(lp_agg_stacks(), leaf).parent == s1);
    CHECK(lp_gpu_join_add(&k) == leaf); /* a second record of the same launch (a graph) */
    /* a launch whose record arrived is not kept once its slot is reused */
    lp_gpu_join_note_launch(6, s1);
    k.correlation = 6;
    lp_gpu_join_add(&k);
    lp_gpu_join_note_launch(6 + LP_GPU_CORR_SLOTS, s2);
    CHECK(lp_gpu_join_lookup(6) == LP_STACK_NONE);
    /* a nested call whose pair's record arrived, and failed calls, expect
     * no record: not kept either */
    lp_gpu_join_note_launch(3, s1);
    lp_gpu_join_note_nested(7, s1, 3);
    k.correlation = 3;
    lp_gpu_join_add(&k);
    lp_gpu_join_note_launch(3 + LP_GPU_CORR_SLOTS, s2);
    lp_gpu_join_note_launch(7 + LP_GPU_CORR_SLOTS, s2);
    CHECK(lp_gpu_join_lookup(7) == LP_STACK_NONE);
    CHECK(lp_gpu_join_lookup(3) == LP_STACK_NONE);
    lp_gpu_join_note_launch(8, s1);
    lp_gpu_join_forget(8);
    CHECK(lp_gpu_join_lookup(8) == LP_STACK_NONE);
    lp_gpu_join_note_launch(8 + LP_GPU_CORR_SLOTS, s2);
    CHECK(lp_gpu_join_lookup(8) == LP_STACK_NONE);
    lp_gpu_join_stats st;
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.unattributed, 0);
    CHECK_EQ_INT(st.kept, 1);
    CHECK_EQ_INT(st.late, 2);
    CHECK_EQ_INT(st.aged_out, 0);
}

/* CUDA 13 (cu130 PyTorch on an H200): a runtime launch's records carry
 * its nested driver call's id. The pair counts as joined, so nothing is
 * left waiting; before the pairing, 300k such launches aged out 236,006
 * launches that had their records. A late record of the nested id, after
 * both slots were reused, still finds its stack. */
TEST(records_of_the_nested_id_join_the_pair) {
    fresh();
    uint32_t s1 = launch_stack(1, 0x1000), s2 = launch_stack(2, 0x3000);
    const uint32_t n = LP_GPU_WAIT_SLOTS + 10; /* pairs: runtime id 2i, driver id 2i + 1 */
    for (uint32_t i = 1; i <= n; i++) {
        lp_gpu_join_note_launch(2 * i, s1);
        lp_gpu_join_note_nested(2 * i + 1, s1, 2 * i);
        lp_gpu_activity k = {LP_GPU_KERNEL, 2 * i + 1, 10, 20, 0, LP_GPU_DIR_OTHER, "k", 0};
        CHECK(lp_stacktab_node(lp_agg_stacks(), lp_gpu_join_add(&k)).parent == s1);
    }
    lp_gpu_join_note_launch(2 * n + 2, s1); /* one whose record comes late, by the driver id */
    lp_gpu_join_note_nested(2 * n + 3, s1, 2 * n + 2);
    for (uint32_t i = 1; i <= 2 * n + 3; i++) lp_gpu_join_note_launch(i + LP_GPU_CORR_SLOTS, s2);
    lp_gpu_join_stats st;
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.kept, 2);
    CHECK_EQ_INT(st.aged_out, 0);
    lp_gpu_activity late = {LP_GPU_KERNEL, 2 * n + 3, 10, 20, 0, LP_GPU_DIR_OTHER, "k", 0};
    CHECK(lp_stacktab_node(lp_agg_stacks(), lp_gpu_join_add(&late)).parent == s1);
    /* a captured launch queues nothing: forgetting it forgets its pair */
    lp_gpu_join_note_launch(9, s1);
    lp_gpu_join_note_nested(10, s1, 9);
    lp_gpu_join_forget(9);
    CHECK(lp_gpu_join_lookup(10) == LP_STACK_NONE);
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.unattributed, 0);
    CHECK_EQ_INT(st.late, 1);
}

/* The kept launches are bounded: past LP_GPU_WAIT_SLOTS the oldest ages
 * out, counted; every other one still finds its records. */
TEST(kept_launches_age_out_counted) {
    fresh();
    uint32_t s1 = launch_stack(1, 0x1000), s2 = launch_stack(2, 0x3000);
    const uint32_t n = LP_GPU_WAIT_SLOTS + 10;
    for (uint32_t i = 1; i <= n; i++) lp_gpu_join_note_launch(i, s1);
    for (uint32_t i = 1; i <= n; i++) lp_gpu_join_note_launch(i + LP_GPU_CORR_SLOTS, s2);
    lp_gpu_join_stats st;
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.kept, n);
    CHECK_EQ_INT(st.aged_out, 10);
    CHECK(lp_gpu_join_lookup(10) == LP_STACK_NONE);
    CHECK(lp_gpu_join_lookup(11) == s1);
    uint32_t found = 0;
    for (uint32_t i = 11; i <= n; i++) {
        lp_gpu_activity k = {LP_GPU_KERNEL, i, 10, 20, 0, LP_GPU_DIR_OTHER, "k", 0};
        found += lp_stacktab_node(lp_agg_stacks(), lp_gpu_join_add(&k)).parent == s1;
    }
    CHECK_EQ_INT(found, n - 10);
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.unattributed, 0);
}

#define THREADS    4
#define PER_THREAD 20000

static uint32_t thread_stacks[THREADS];

static void *launcher(void *arg) {
    int t = (int)(intptr_t)arg;
    for (uint32_t i = 0; i < PER_THREAD; i++)
        lp_gpu_join_note_launch(1 + (uint32_t)t * PER_THREAD + i, thread_stacks[t]);
    return NULL;
}

static void *joiner(void *arg) {
    int t = (int)(intptr_t)arg;
    for (uint32_t i = 0; i < PER_THREAD; i++) {
        lp_gpu_activity k = {
            LP_GPU_KERNEL, 1 + (uint32_t)t * PER_THREAD + i, 100, 101, 0, LP_GPU_DIR_OTHER, "k", 0};
        lp_gpu_join_add(&k);
    }
    return NULL;
}

TEST(concurrent_launches_then_concurrent_joins) {
    fresh();
    for (int t = 0; t < THREADS; t++) thread_stacks[t] = launch_stack((uint64_t)t + 1, 0x1000);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, launcher, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, joiner, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    const char *k = lp_gpu_name("k", 1);
    for (int t = 0; t < THREADS; t++) {
        uint32_t leaf = lp_agg_extend(thread_stacks[t], (void *)k, LP_OFFSET_GPU_OP);
        CHECK_EQ_INT(col(leaf, LP_M_GPU_KERNELS), PER_THREAD);
        CHECK_EQ_INT(col(leaf, LP_M_GPU_KERNEL), PER_THREAD);
    }
    lp_gpu_join_stats st;
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.unattributed, 0);
    CHECK_EQ_INT(st.records, THREADS * PER_THREAD);
}

TEST(device_memory_peak_is_replayed_per_stack) {
    fresh();
    REQUIRE(lp_gpu_devmem_reset() == 0);
    uint32_t a = launch_stack(1, 0x1000), b = launch_stack(1, 0x2000);
    lp_gpu_devmem_alloc(0x7f0000001000, 100, a);
    lp_gpu_devmem_alloc(0x7f0000002000, 300, b); /* peak: a 100 + b 300 */
    lp_gpu_devmem_free(0x7f0000002000);
    lp_gpu_devmem_alloc(0x7f0000003000, 250, a); /* 350 < 400: no new peak */
    lp_gpu_devmem_free(0x1234);                  /* never seen */
    lp_gpu_devmem_finish();
    CHECK_EQ_INT(col(a, LP_M_GPU_PEAK), 100);
    CHECK_EQ_INT(col(b, LP_M_GPU_PEAK), 300);
    CHECK_EQ_INT(col(a, LP_M_GPU_ALLOC), 350);
    CHECK_EQ_INT(col(b, LP_M_GPU_ALLOC), 300);
    lp_gpu_devmem_stats st;
    lp_gpu_devmem_get_stats(&st);
    CHECK_EQ_INT(st.live_bytes, 350);
    CHECK_EQ_INT(st.peak_bytes, 400);
    CHECK_EQ_INT(st.unknown_frees, 1);
    CHECK_EQ_INT(st.peak_exact, 1);
}

TEST(device_memory_table_survives_churn) {
    fresh();
    REQUIRE(lp_gpu_devmem_reset() == 0);
    uint32_t a = launch_stack(1, 0x1000);
    /* many blocks whose addresses collide in the table, freed in another
     * order: every free must find its block (backward-shift deletion) */
    for (uint64_t i = 1; i <= 5000; i++) lp_gpu_devmem_alloc(i << 21, 10, a);
    for (uint64_t i = 1; i <= 5000; i += 2) lp_gpu_devmem_free(i << 21);
    for (uint64_t i = 5000; i >= 2; i -= 2) lp_gpu_devmem_free(i << 21);
    lp_gpu_devmem_stats st;
    lp_gpu_devmem_get_stats(&st);
    CHECK_EQ_INT(st.live_bytes, 0);
    CHECK_EQ_INT(st.unknown_frees, 0);
    CHECK_EQ_INT(st.peak_bytes, 50000);
}

/* The stack a graph kernel must land on: the replay's, the marker, the
 * captured frames below those both share (launch_stack's root-side frame),
 * the kernel. */
static uint32_t grafted_leaf(uint32_t replay, uintptr_t captured_code, const char *kernel) {
    uint32_t s = lp_agg_extend(replay, NULL, LP_OFFSET_GPU_GRAPH);
    s = lp_agg_extend(s, (void *)captured_code, 10);
    return lp_agg_extend(s, (void *)lp_gpu_name(kernel, strlen(kernel)), LP_OFFSET_GPU_OP);
}

TEST(graph_replays_go_to_the_captured_stack) {
    fresh();
    uint32_t captured = launch_stack(1, 0x3000), replay = launch_stack(1, 0x4000);
    uint32_t bwd = lp_agg_extend(launch_stack(1, 0x5000), NULL, LP_OFFSET_GPU_BACKWARD);
    lp_gpu_graph_node_created(0x77, captured);
    lp_gpu_graph_node_created(0x77, replay); /* a node keeps its first stack */
    lp_gpu_graph_node_cloned(0x78, 0x77);    /* instantiate: the clone takes it */
    lp_gpu_graph_node_cloned(0x79, 0x55);    /* a clone of an unknown node: none */
    lp_gpu_graph_node_created(0x80, bwd);    /* captured in backward */
    CHECK_EQ_INT(lp_gpu_graph_node_stack(0x78), captured);
    CHECK_EQ_INT(lp_gpu_graph_node_stack(0x79), LP_STACK_NONE);
    lp_gpu_join_note_launch(41, replay);
    lp_gpu_activity clone = {LP_GPU_KERNEL, 41, 1000, 1300, 0, LP_GPU_DIR_OTHER, "graph_k", 0, 0, 0, 0x78};
    lp_gpu_activity orig = {LP_GPU_KERNEL, 41, 2000, 2100, 0, LP_GPU_DIR_OTHER, "graph_k", 0, 0, 0, 0x77};
    lp_gpu_activity unknown = {LP_GPU_KERNEL, 41, 3000, 3050, 0, LP_GPU_DIR_OTHER, "graph_k", 0, 0, 0, 0x79};
    lp_gpu_activity back = {LP_GPU_KERNEL, 41, 4000, 4020, 0, LP_GPU_DIR_OTHER, "graph_k", 0, 0, 0, 0x80};
    uint32_t a = lp_gpu_join_add(&clone), b = lp_gpu_join_add(&orig), c = lp_gpu_join_add(&unknown);
    uint32_t d = lp_gpu_join_add(&back);
    CHECK_EQ_INT(a, grafted_leaf(replay, 0x3000, "graph_k"));
    CHECK_EQ_INT(b, a); /* either id a record carries finds the captured stack */
    CHECK_EQ_INT(col(a, LP_M_GPU_KERNEL), 400);
    CHECK_EQ_INT(col(a, LP_M_GPU_KERNELS), 2);
    CHECK_EQ_INT(col(a, LP_M_GPU_BACKWARD), 0);
    /* no captured stack: on the replay's, as without graphs */
    CHECK_EQ_INT(c, lp_agg_extend(replay, (void *)lp_gpu_name("graph_k", 7), LP_OFFSET_GPU_OP));
    CHECK_EQ_INT(col(c, LP_M_GPU_KERNEL), 50);
    /* a node captured in backward keeps counting as backward */
    CHECK_EQ_INT(col(d, LP_M_GPU_BACKWARD), 20);
    lp_gpu_join_stats st;
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.graph_nodes, 3);
    CHECK_EQ_INT(st.graph_joined, 3);
    CHECK_EQ_INT(st.graph_missed, 1);
    CHECK_EQ_INT(st.records, 4);
    lp_gpu_join_reset(); /* reset with the join */
    CHECK_EQ_INT(lp_gpu_graph_node_stack(0x77), LP_STACK_NONE);
}

/* Capturing threads note nodes and clones while another thread joins
 * replays naming them: every record lands on the grafted stack or, for a
 * node not noted yet, on the replay's; none is lost or double counted. */
#define GRAPH_NOTERS    2
#define NODES_PER_NOTER 2000
static uint32_t graph_captured;

static void *graph_noter(void *arg) {
    uint64_t base = ((uint64_t)(intptr_t)arg + 1) << 32;
    for (uint64_t i = 1; i <= NODES_PER_NOTER; i++) {
        lp_gpu_graph_node_created(base + 2 * i, graph_captured);
        lp_gpu_graph_node_cloned(base + 2 * i + 1, base + 2 * i);
    }
    return NULL;
}

TEST(graph_nodes_noted_while_replays_join) {
    fresh();
    graph_captured = launch_stack(1, 0x3000);
    uint32_t replay = launch_stack(2, 0x4000);
    lp_gpu_join_note_launch(43, replay);
    pthread_t th[GRAPH_NOTERS];
    for (int t = 0; t < GRAPH_NOTERS; t++) pthread_create(&th[t], NULL, graph_noter, (void *)(intptr_t)t);
    int64_t n = 0;
    for (int t = 0; t < GRAPH_NOTERS; t++)
        for (uint64_t i = 1; i <= NODES_PER_NOTER; i++, n++) {
            uint64_t clone = (((uint64_t)t + 1) << 32) + 2 * i + 1;
            lp_gpu_activity k = {LP_GPU_KERNEL, 43, 1000, 1001, 0,    LP_GPU_DIR_OTHER,
                                 "graph_k",     0,  0,    0,    clone};
            REQUIRE(lp_gpu_join_add(&k) != LP_STACK_NONE);
        }
    for (int t = 0; t < GRAPH_NOTERS; t++) pthread_join(th[t], NULL);
    lp_gpu_join_stats st;
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.graph_nodes, 2 * GRAPH_NOTERS * NODES_PER_NOTER);
    CHECK_EQ_INT(st.graph_joined + st.graph_missed, n);
    uint32_t on_replay = lp_agg_extend(replay, (void *)lp_gpu_name("graph_k", 7), LP_OFFSET_GPU_OP);
    uint32_t grafted = lp_agg_extend(lp_agg_extend(replay, NULL, LP_OFFSET_GPU_GRAPH), (void *)0x9000, 4);
    grafted = lp_agg_extend(lp_agg_extend(grafted, (void *)0x3000, 10), (void *)lp_gpu_name("graph_k", 7),
                            LP_OFFSET_GPU_OP);
    /* two threads' stacks share no frame: the whole captured stack is grafted */
    CHECK_EQ_INT(col(grafted, LP_M_GPU_KERNELS), (int64_t)st.graph_joined);
    CHECK_EQ_INT(col(on_replay, LP_M_GPU_KERNELS), (int64_t)st.graph_missed);
}

TEST(graph_node_table_full_is_counted) {
    fresh();
    uint32_t captured = launch_stack(1, 0x3000), replay = launch_stack(1, 0x4000);
    for (uint64_t id = 1; id <= LP_GPU_GRAPH_NODES + 10; id++) lp_gpu_graph_node_created(id << 20, captured);
    lp_gpu_join_stats st;
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.graph_nodes, LP_GPU_GRAPH_NODES);
    CHECK_EQ_INT(st.graph_full, 10);
    CHECK_EQ_INT(lp_gpu_graph_node_stack((uint64_t)1 << 20), captured);
    CHECK_EQ_INT(lp_gpu_graph_node_stack((uint64_t)LP_GPU_GRAPH_NODES << 20), captured);
    /* a node past the table: its kernel stays on the replay line */
    lp_gpu_join_note_launch(42, replay);
    uint64_t late = (uint64_t)(LP_GPU_GRAPH_NODES + 1) << 20;
    lp_gpu_activity k = {LP_GPU_KERNEL, 42, 1000, 1100, 0, LP_GPU_DIR_OTHER, "graph_k", 0, 0, 0, late};
    CHECK_EQ_INT(lp_gpu_join_add(&k),
                 lp_agg_extend(replay, (void *)lp_gpu_name("graph_k", 7), LP_OFFSET_GPU_OP));
    lp_gpu_join_get_stats(&st);
    CHECK_EQ_INT(st.graph_missed, 1);
}

RUN_TESTS(names_are_interned_once, collective_kernels_are_communication, backward_work_counts_as_backward,
          kernel_and_copies_join_their_launch, unknown_and_incomplete_records, late_records_keep_their_launch,
          records_of_the_nested_id_join_the_pair, kept_launches_age_out_counted,
          concurrent_launches_then_concurrent_joins, device_memory_peak_is_replayed_per_stack,
          device_memory_table_survives_churn, graph_replays_go_to_the_captured_stack,
          graph_nodes_noted_while_replays_join, graph_node_table_full_is_counted)
