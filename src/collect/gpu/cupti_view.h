/* collect: lprof's own view of the CUPTI ABI: the few functions, values and
 * record fields the CUPTI collector uses, declared here so lprof builds
 * where no CUDA headers exist and loads libcupti at run time (dlopen).
 * Where the real headers are found at build time, cupti_view_check.c
 * asserts every value and offset below against them (gpu.md 2.1, 5.2).
 * Records are read by byte offset, through the layout lprof picks by the
 * CUPTI API version (LP_CUPTI_LAYOUTS): every record version lprof knows
 * (Kernel9 to Kernel13, Memcpy5/6, Memset3/4) has the fields it reads at
 * the same offsets; a newer CUPTI is refused rather than misread. */
#ifndef LPROF_COLLECT_GPU_CUPTI_VIEW_H
#define LPROF_COLLECT_GPU_CUPTI_VIEW_H

#include <stddef.h>
#include <stdint.h>

typedef int lp_cupti_result;       /* CUptiResult */
typedef void *lp_cupti_subscriber; /* CUpti_SubscriberHandle */
typedef void (*lp_cupti_callback)(void *userdata, int domain, uint32_t cbid, const void *cbdata);
typedef void (*lp_cupti_buffer_request)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*lp_cupti_buffer_complete)(void *ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                         size_t valid);

#define LP_CUPTI_SUCCESS                     0
#define LP_CUPTI_ERROR_MAX_LIMIT_REACHED     12
#define LP_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS  39
#define LP_CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN 64

#define LP_CUPTI_API_ENTER       0
#define LP_CUPTI_API_EXIT        1
#define LP_CUPTI_DOMAIN_DRIVER   1
#define LP_CUPTI_DOMAIN_RUNTIME  2
#define LP_CUPTI_DOMAIN_RESOURCE 3

/* resource callbacks (CUpti_CallbackIdResource): a graph node made (by a
 * launch into a capturing stream, or added by hand), and one cloned from
 * another (an instantiate copies each node into the executable graph) */
#define LP_CUPTI_CBID_GRAPHNODE_CREATED 13
#define LP_CUPTI_CBID_GRAPHNODE_CLONED  20

#define LP_CUPTI_KIND_MEMCPY            1
#define LP_CUPTI_KIND_MEMSET            2
#define LP_CUPTI_KIND_KERNEL            3
#define LP_CUPTI_KIND_CONCURRENT_KERNEL 10

#define LP_CUPTI_COPY_HTOD 1
#define LP_CUPTI_COPY_DTOH 2
#define LP_CUPTI_COPY_DTOD 8
#define LP_CUPTI_COPY_HTOH 9
#define LP_CUPTI_COPY_PTOP 10

#define LP_CUPTI_FLUSH_FORCED 1

/* CUpti_CallbackData (runtime and driver domains) */
typedef struct {
    int site; /* LP_CUPTI_API_ENTER / EXIT */
    const char *function_name;
    const void *params; /* the API's <name>_params struct */
    void *return_value; /* cudaError_t* / CUresult*, valid at EXIT */
    const char *symbol_name;
    void *context;
    uint32_t context_uid;
    uint64_t *correlation_data;
    uint32_t correlation_id;
} lp_cupti_callback_data;

/* CUpti_ResourceData: a resource callback's data; for the graph callbacks
 * resource_descriptor points to a CUpti_GraphData (seen on CUPTI 13.0,
 * H200, 2026-11-27: the callback data itself is not the graph data) */
typedef struct {
    void *context;             /* CUcontext */
    void *resource_handle;     /* union { CUstream stream; } */
    void *resource_descriptor; /* lp_cupti_graph_data * for graph callbacks */
} lp_cupti_resource_data;

/* CUpti_GraphData (the graph callbacks' resource descriptor) */
typedef struct {
    void *graph;          /* CUgraph */
    void *original_graph; /* CUgraph the graph was cloned from */
    void *node;           /* CUgraphNode: for cuptiGetGraphNodeId */
    void *original_node;  /* CUgraphNode a cloned node was cloned from */
    int node_type;        /* CUgraphNodeType */
    void *dependency;     /* CUgraphNode */
    void *graph_exec;     /* CUgraphExec */
} lp_cupti_graph_data;

/* CUpti_SubscriberParams (cuptiSubscribe_v2) */
typedef struct {
    size_t struct_size;
    const char *subscriber_name;
    char *old_subscriber_name;
    size_t old_subscriber_size;
} lp_cupti_subscriber_params;

/* CUPTI API versions (cupti_version.h): 19 is CUDA 12.0 (18 was 11.8),
 * from CUDA 13.0 on xxyyzz (130000 = 13.0, 130100 = 13.1, ...). Each layout
 * row: the first API version delivering it, and the record structs (by
 * kind: kernel, memcpy, memset) whose offsets cupti_view_check.c asserts,
 * under a CUPTI_API_VERSION guard, against headers of that version or
 * newer. A CUPTI newer than LP_CUPTI_NEWEST_API is refused: its record
 * versions are unknown here. */
#define LP_CUPTI_OLDEST_API 19
#define LP_CUPTI_NEWEST_API 130499
#define LP_CUPTI_LAYOUTS(X)                            \
    X(19, "CUDA 12: Kernel9, Memcpy5, Memset3")        \
    X(130000, "CUDA 13.0: Kernel10, Memcpy6, Memset4") \
    X(130100, "CUDA 13.1: Kernel11, Memcpy6, Memset4") \
    X(130400, "CUDA 13.4: Kernel12/Kernel13, Memcpy6, Memset4")

/* Record field offsets (bytes from the record's start), the same in every
 * layout above. */
#define LP_CUPTI_REC_KIND           0
#define LP_CUPTI_KERNEL_START       16
#define LP_CUPTI_KERNEL_END         24
#define LP_CUPTI_KERNEL_CORRELATION 92
#define LP_CUPTI_KERNEL_NAME        104
#define LP_CUPTI_KERNEL_DEVICE      40 /* uint32_t deviceId */
#define LP_CUPTI_KERNEL_STREAM      48 /* uint32_t streamId */
/* uint64_t graphNodeId: the node a graph launch ran this from, 0 outside
 * graphs (cuptiGetGraphNodeId's ids) */
#define LP_CUPTI_KERNEL_GRAPH_NODE  144
#define LP_CUPTI_MEMCPY_COPY_KIND   4 /* uint8_t */
#define LP_CUPTI_MEMCPY_BYTES       8
#define LP_CUPTI_MEMCPY_START       16
#define LP_CUPTI_MEMCPY_END         24
#define LP_CUPTI_MEMCPY_CORRELATION 44
#define LP_CUPTI_MEMCPY_DEVICE      32
#define LP_CUPTI_MEMCPY_STREAM      40
#define LP_CUPTI_MEMCPY_GRAPH_NODE  64
#define LP_CUPTI_MEMSET_BYTES       8
#define LP_CUPTI_MEMSET_START       16
#define LP_CUPTI_MEMSET_END         24
#define LP_CUPTI_MEMSET_CORRELATION 44
#define LP_CUPTI_MEMSET_DEVICE      32
#define LP_CUPTI_MEMSET_STREAM      40
#define LP_CUPTI_MEMSET_GRAPH_NODE  64

/* The callback ids lprof enables: X(api name, domain, id, role). WORK
 * queues device work (its correlation id meets activity records); ALLOC
 * and FREE move device memory (params: first field the pointer, or where
 * it is written; second field the size). MAP (cuMemMap, the virtual memory
 * API of PyTorch's expandable segments) makes an address range usable: the
 * address is the first field itself, the size second; cuMemCreate is not
 * charged (its physical handle has no address, and charging both would
 * count the memory twice). REPLAY is WORK that launches a graph: a node
 * made inside it (none is expected) must not cancel its records. GRAPH adds
 * a node to a graph by hand: it queues nothing, but the node it makes takes
 * its stack (GRAPHNODE_CREATED). */
#define LP_CUPTI_CBIDS(X)                                         \
    X(cudaLaunchKernel_v7000, RUNTIME, 211, WORK)                 \
    X(cudaLaunchKernel_ptsz_v7000, RUNTIME, 214, WORK)            \
    X(cudaLaunchKernelExC_v11060, RUNTIME, 430, WORK)             \
    X(cudaLaunchKernelExC_ptsz_v11060, RUNTIME, 431, WORK)        \
    X(cudaLaunchCooperativeKernel_v9000, RUNTIME, 269, WORK)      \
    X(cudaLaunchCooperativeKernel_ptsz_v9000, RUNTIME, 270, WORK) \
    X(cudaGraphLaunch_v10000, RUNTIME, 311, REPLAY)               \
    X(cudaGraphLaunch_ptsz_v10000, RUNTIME, 312, REPLAY)          \
    X(cudaGraphAddKernelNode_v10000, RUNTIME, 289, GRAPH)         \
    X(cudaMemcpy_v3020, RUNTIME, 31, WORK)                        \
    X(cudaMemcpy2D_v3020, RUNTIME, 32, WORK)                      \
    X(cudaMemcpyToSymbol_v3020, RUNTIME, 39, WORK)                \
    X(cudaMemcpyFromSymbol_v3020, RUNTIME, 40, WORK)              \
    X(cudaMemcpyAsync_v3020, RUNTIME, 41, WORK)                   \
    X(cudaMemcpy2DAsync_v3020, RUNTIME, 44, WORK)                 \
    X(cudaMemcpyToSymbolAsync_v3020, RUNTIME, 47, WORK)           \
    X(cudaMemcpyFromSymbolAsync_v3020, RUNTIME, 48, WORK)         \
    X(cudaMemset_v3020, RUNTIME, 49, WORK)                        \
    X(cudaMemset2D_v3020, RUNTIME, 50, WORK)                      \
    X(cudaMemsetAsync_v3020, RUNTIME, 51, WORK)                   \
    X(cudaMemset2DAsync_v3020, RUNTIME, 52, WORK)                 \
    X(cudaMemcpy3D_v3020, RUNTIME, 144, WORK)                     \
    X(cudaMemcpy3DAsync_v3020, RUNTIME, 145, WORK)                \
    X(cudaMemcpyPeer_v4000, RUNTIME, 160, WORK)                   \
    X(cudaMemcpyPeerAsync_v4000, RUNTIME, 161, WORK)              \
    X(cudaMemcpy_ptds_v7000, RUNTIME, 215, WORK)                  \
    X(cudaMemcpyAsync_ptsz_v7000, RUNTIME, 225, WORK)             \
    X(cudaMemset_ptds_v7000, RUNTIME, 233, WORK)                  \
    X(cudaMemsetAsync_ptsz_v7000, RUNTIME, 235, WORK)             \
    X(cudaMemcpyBatchAsync_v12080, RUNTIME, 482, WORK)            \
    X(cudaMemcpyBatchAsync_ptsz_v12080, RUNTIME, 483, WORK)       \
    X(cudaMemcpy3DBatchAsync_v12080, RUNTIME, 484, WORK)          \
    X(cudaMemcpy3DBatchAsync_ptsz_v12080, RUNTIME, 485, WORK)     \
    X(__cudaLaunchKernel_v13000, RUNTIME, 505, WORK)              \
    X(__cudaLaunchKernel_ptsz_v13000, RUNTIME, 506, WORK)         \
    X(cudaMemcpyBatchAsync_v13000, RUNTIME, 509, WORK)            \
    X(cudaMemcpyBatchAsync_ptsz_v13000, RUNTIME, 510, WORK)       \
    X(cudaMemcpy3DBatchAsync_v13000, RUNTIME, 511, WORK)          \
    X(cudaMemcpy3DBatchAsync_ptsz_v13000, RUNTIME, 512, WORK)     \
    X(cudaMalloc_v3020, RUNTIME, 20, ALLOC)                       \
    X(cudaMallocManaged_v6000, RUNTIME, 206, ALLOC)               \
    X(cudaMallocAsync_v11020, RUNTIME, 373, ALLOC)                \
    X(cudaMallocAsync_ptsz_v11020, RUNTIME, 374, ALLOC)           \
    X(cudaMallocFromPoolAsync_v11020, RUNTIME, 391, ALLOC)        \
    X(cudaMallocFromPoolAsync_ptsz_v11020, RUNTIME, 392, ALLOC)   \
    X(cudaFree_v3020, RUNTIME, 22, FREE)                          \
    X(cudaFreeAsync_v11020, RUNTIME, 375, FREE)                   \
    X(cudaFreeAsync_ptsz_v11020, RUNTIME, 376, FREE)              \
    X(cuLaunchKernel, DRIVER, 307, WORK)                          \
    X(cuLaunchKernel_ptsz, DRIVER, 442, WORK)                     \
    X(cuLaunchKernelEx, DRIVER, 652, WORK)                        \
    X(cuLaunchKernelEx_ptsz, DRIVER, 653, WORK)                   \
    X(cuLaunchCooperativeKernel, DRIVER, 477, WORK)               \
    X(cuLaunchCooperativeKernel_ptsz, DRIVER, 478, WORK)          \
    X(cuGraphLaunch, DRIVER, 514, REPLAY)                         \
    X(cuGraphLaunch_ptsz, DRIVER, 515, REPLAY)                    \
    X(cuGraphAddKernelNode, DRIVER, 502, GRAPH)                   \
    X(cuGraphAddKernelNode_v2, DRIVER, 689, GRAPH)                \
    X(cuMemcpy, DRIVER, 305, WORK)                                \
    X(cuMemcpyAsync, DRIVER, 306, WORK)                           \
    X(cuMemcpyHtoD_v2, DRIVER, 276, WORK)                         \
    X(cuMemcpyHtoDAsync_v2, DRIVER, 277, WORK)                    \
    X(cuMemcpyDtoH_v2, DRIVER, 278, WORK)                         \
    X(cuMemcpyDtoHAsync_v2, DRIVER, 279, WORK)                    \
    X(cuMemcpyDtoD_v2, DRIVER, 280, WORK)                         \
    X(cuMemcpyDtoDAsync_v2, DRIVER, 281, WORK)                    \
    X(cuMemsetD8_v2, DRIVER, 249, WORK)                           \
    X(cuMemsetD32_v2, DRIVER, 251, WORK)                          \
    X(cuMemsetD8Async, DRIVER, 216, WORK)                         \
    X(cuMemsetD32Async, DRIVER, 220, WORK)                        \
    X(cuMemcpyAsync_ptsz, DRIVER, 418, WORK)                      \
    X(cuMemcpyHtoDAsync_v2_ptsz, DRIVER, 421, WORK)               \
    X(cuMemcpyDtoHAsync_v2_ptsz, DRIVER, 422, WORK)               \
    X(cuMemcpyDtoDAsync_v2_ptsz, DRIVER, 423, WORK)               \
    X(cuMemcpyBatchAsync, DRIVER, 776, WORK)                      \
    X(cuMemcpyBatchAsync_ptsz, DRIVER, 777, WORK)                 \
    X(cuMemcpy3DBatchAsync, DRIVER, 778, WORK)                    \
    X(cuMemcpy3DBatchAsync_ptsz, DRIVER, 779, WORK)               \
    X(cuMemcpyBatchAsync_v2, DRIVER, 796, WORK)                   \
    X(cuMemcpyBatchAsync_v2_ptsz, DRIVER, 797, WORK)              \
    X(cuMemcpy3DBatchAsync_v2, DRIVER, 798, WORK)                 \
    X(cuMemcpy3DBatchAsync_v2_ptsz, DRIVER, 799, WORK)            \
    X(cuMemAlloc_v2, DRIVER, 243, ALLOC)                          \
    X(cuMemAllocAsync, DRIVER, 598, ALLOC)                        \
    X(cuMemAllocAsync_ptsz, DRIVER, 599, ALLOC)                   \
    X(cuMemAllocFromPoolAsync, DRIVER, 611, ALLOC)                \
    X(cuMemAllocFromPoolAsync_ptsz, DRIVER, 612, ALLOC)           \
    X(cuMemMap, DRIVER, 551, MAP)                                 \
    X(cuMemUnmap, DRIVER, 552, FREE)                              \
    X(cuMemFree_v2, DRIVER, 245, FREE)                            \
    X(cuMemFreeAsync, DRIVER, 600, FREE)                          \
    X(cuMemFreeAsync_ptsz, DRIVER, 601, FREE)

#endif
