/* collect: checks lprof's CUPTI view (cupti_view.h) against the real CUPTI
 * headers, at compile time, where they are found (setup.py passes their
 * folder and LPROF_HAVE_CUPTI_H). Without them this file is empty: lprof
 * does not need the headers to build or to run. */
#include "collect/gpu/cupti_view.h"

#if defined(LPROF_HAVE_CUPTI_H) && __has_include(<cupti.h>)
#include <cupti.h>

#define SAME(a, b)    _Static_assert((a) == (b), #a " != " #b)
#define AT(T, f, off) _Static_assert(offsetof(T, f) == (off), #T "." #f " is not at " #off)

SAME(LP_CUPTI_SUCCESS, CUPTI_SUCCESS);
SAME(LP_CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
SAME(LP_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
SAME(LP_CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN, CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN);
SAME(LP_CUPTI_API_ENTER, CUPTI_API_ENTER);
SAME(LP_CUPTI_API_EXIT, CUPTI_API_EXIT);
SAME(LP_CUPTI_DOMAIN_DRIVER, CUPTI_CB_DOMAIN_DRIVER_API);
SAME(LP_CUPTI_DOMAIN_RUNTIME, CUPTI_CB_DOMAIN_RUNTIME_API);
SAME(LP_CUPTI_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_RESOURCE);
SAME(LP_CUPTI_CBID_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
SAME(LP_CUPTI_CBID_GRAPHNODE_CLONED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
SAME(LP_CUPTI_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY);
SAME(LP_CUPTI_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
SAME(LP_CUPTI_KIND_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
SAME(LP_CUPTI_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
SAME(LP_CUPTI_COPY_HTOD, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
SAME(LP_CUPTI_COPY_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
SAME(LP_CUPTI_COPY_DTOD, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
SAME(LP_CUPTI_COPY_HTOH, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
SAME(LP_CUPTI_COPY_PTOP, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
SAME(LP_CUPTI_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);

SAME(sizeof(lp_cupti_callback_data), sizeof(CUpti_CallbackData));
AT(CUpti_CallbackData, callbackSite, offsetof(lp_cupti_callback_data, site));
AT(CUpti_CallbackData, functionParams, offsetof(lp_cupti_callback_data, params));
AT(CUpti_CallbackData, functionReturnValue, offsetof(lp_cupti_callback_data, return_value));
AT(CUpti_CallbackData, correlationId, offsetof(lp_cupti_callback_data, correlation_id));
SAME(sizeof(lp_cupti_subscriber_params), sizeof(CUpti_SubscriberParams));
SAME(sizeof(lp_cupti_resource_data), sizeof(CUpti_ResourceData));
AT(CUpti_ResourceData, resourceDescriptor, offsetof(lp_cupti_resource_data, resource_descriptor));
SAME(sizeof(lp_cupti_graph_data), sizeof(CUpti_GraphData));
AT(CUpti_GraphData, node, offsetof(lp_cupti_graph_data, node));
AT(CUpti_GraphData, originalNode, offsetof(lp_cupti_graph_data, original_node));
/* cuptiGetGraphNodeId(CUgraphNode, uint64_t *): how cupti.c calls it */
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuptiGetGraphNodeId),
                                            CUptiResult (*)(CUgraphNode, uint64_t *)),
               "cuptiGetGraphNodeId's signature");
AT(CUpti_SubscriberParams, oldSubscriberName, offsetof(lp_cupti_subscriber_params, old_subscriber_name));

/* the records of CUDA 13 (delivered there) and of CUDA 12 (older CUPTI) */
#define KERNEL_FIELDS(T)                               \
    AT(T, kind, LP_CUPTI_REC_KIND);                    \
    AT(T, start, LP_CUPTI_KERNEL_START);               \
    AT(T, end, LP_CUPTI_KERNEL_END);                   \
    AT(T, correlationId, LP_CUPTI_KERNEL_CORRELATION); \
    AT(T, deviceId, LP_CUPTI_KERNEL_DEVICE);           \
    AT(T, streamId, LP_CUPTI_KERNEL_STREAM);           \
    AT(T, graphNodeId, LP_CUPTI_KERNEL_GRAPH_NODE);    \
    AT(T, name, LP_CUPTI_KERNEL_NAME)
KERNEL_FIELDS(CUpti_ActivityKernel9);
#if CUPTI_API_VERSION >= 130000 /* CUDA 12's headers lack CUDA 13's records and ids */
KERNEL_FIELDS(CUpti_ActivityKernel10);
#endif
/* later CUDA 13 releases (LP_CUPTI_LAYOUTS), checked where such headers are */
#if CUPTI_API_VERSION >= 130100
KERNEL_FIELDS(CUpti_ActivityKernel11);
#endif
#if CUPTI_API_VERSION >= 130400
KERNEL_FIELDS(CUpti_ActivityKernel12);
KERNEL_FIELDS(CUpti_ActivityKernel13);
#endif
/* headers newer than LP_CUPTI_NEWEST_API: their record versions are not
 * asserted here, and lprof refuses such a CUPTI at run time until they are
 * read and added to LP_CUPTI_LAYOUTS */
#define MEMCPY_FIELDS(T)                            \
    AT(T, copyKind, LP_CUPTI_MEMCPY_COPY_KIND);     \
    AT(T, bytes, LP_CUPTI_MEMCPY_BYTES);            \
    AT(T, start, LP_CUPTI_MEMCPY_START);            \
    AT(T, end, LP_CUPTI_MEMCPY_END);                \
    AT(T, deviceId, LP_CUPTI_MEMCPY_DEVICE);        \
    AT(T, streamId, LP_CUPTI_MEMCPY_STREAM);        \
    AT(T, graphNodeId, LP_CUPTI_MEMCPY_GRAPH_NODE); \
    AT(T, correlationId, LP_CUPTI_MEMCPY_CORRELATION)
MEMCPY_FIELDS(CUpti_ActivityMemcpy5);
#if CUPTI_API_VERSION >= 130000
MEMCPY_FIELDS(CUpti_ActivityMemcpy6);
#endif
#define MEMSET_FIELDS(T)                            \
    AT(T, bytes, LP_CUPTI_MEMSET_BYTES);            \
    AT(T, start, LP_CUPTI_MEMSET_START);            \
    AT(T, end, LP_CUPTI_MEMSET_END);                \
    AT(T, deviceId, LP_CUPTI_MEMSET_DEVICE);        \
    AT(T, streamId, LP_CUPTI_MEMSET_STREAM);        \
    AT(T, graphNodeId, LP_CUPTI_MEMSET_GRAPH_NODE); \
    AT(T, correlationId, LP_CUPTI_MEMSET_CORRELATION)
MEMSET_FIELDS(CUpti_ActivityMemset3);
#if CUPTI_API_VERSION >= 130000
MEMSET_FIELDS(CUpti_ActivityMemset4);
#endif

/* every callback id by its name in the real headers */
/* pasted in one step: cuda.h defines some API names as macros
 * (cuMemcpyBatchAsync -> cuMemcpyBatchAsync_v2), which must not expand */
#define CHECK_CBID(name, domain, id, role) SAME(id, CUPTI_##domain##_TRACE_CBID_##name);
#if CUPTI_API_VERSION >= 130000 /* the list holds CUDA 13's ids (505, 509, ...) */
LP_CUPTI_CBIDS(CHECK_CBID)
#endif

/* alloc params: where the pointer is written (first field), size second;
 * free params: the pointer first */
#define ALLOC_PARAMS(T, ptr, size) \
    AT(T, ptr, 0);                 \
    AT(T, size, sizeof(void *))
ALLOC_PARAMS(cudaMalloc_v3020_params, devPtr, size);
ALLOC_PARAMS(cudaMallocManaged_v6000_params, devPtr, size);
ALLOC_PARAMS(cudaMallocAsync_v11020_params, devPtr, size);
ALLOC_PARAMS(cuMemAlloc_v2_params, dptr, bytesize);
ALLOC_PARAMS(cuMemAllocAsync_params, dptr, bytesize);
ALLOC_PARAMS(cudaMallocFromPoolAsync_v11020_params, ptr, size);
ALLOC_PARAMS(cuMemAllocFromPoolAsync_params, dptr, bytesize);
/* map: the address by value first, the size second; unmap: the address */
AT(cuMemMap_params, ptr, 0);
AT(cuMemMap_params, size, sizeof(CUdeviceptr));
AT(cuMemUnmap_params, ptr, 0);
AT(cudaFree_v3020_params, devPtr, 0);
AT(cudaFreeAsync_v11020_params, devPtr, 0);
AT(cuMemFree_v2_params, dptr, 0);
AT(cuMemFreeAsync_params, dptr, 0);
SAME(sizeof(CUdeviceptr), sizeof(void *));
#endif

/* ISO C forbids an empty translation unit */
typedef int lp_cupti_view_check_unit;
