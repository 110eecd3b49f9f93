"""A Level Zero program for lprof --gpu tests without a GPU (see
gpu_levelzero_workload.py): the calls Intel's Unified Runtime v2 adapter
makes for a PyTorch XPU step, with the fake driver keeping 4 submissions in
flight. One regular command list of 2 launches (3 groups each) is recorded
first; then 3 steps on the immediate list, each: a fill of 65536 bytes
signalling a program event, a launch with arguments of 20 groups (the
classic launch where the loader lacks it), a cooperative launch of 4
groups, an indirect launch of 6 groups, a region copy of 256 x 100 bytes
device to host signalling another event, a 64000-byte copy device to host,
the regular list appended to the immediate one (or executed by a queue
where the loader lacks that call) signalling a third event, a barrier
signalling a fourth, a host sync of the list (or of the barrier's event),
and the four events reset by the host for the next step."""
import ctypes
import os

from ze_program import FOREVER, GroupCount, P, PoolDesc, check, kernel, open_device, u32, ze


class CopyRegion(ctypes.Structure):
    _fields_ = [("x", u32), ("y", u32), ("z", u32), ("width", u32), ("height", u32), ("depth", u32)]


driver = ctypes.CDLL(os.environ["ZE_ENABLE_ALT_DRIVERS"])  # the fake driver itself
driver.fake_ze_set_inflight(4)
have_args = hasattr(ze, "zeCommandListAppendLaunchKernelWithArguments")
have_immediate = hasattr(ze, "zeCommandListImmediateAppendCommandListsExp")
have_list_sync = hasattr(ze, "zeCommandListHostSynchronize")
if have_args:
    ze.zeCommandListAppendLaunchKernelWithArguments.argtypes = [
        P, P, GroupCount, GroupCount, P, P, P, u32, P]

check(ze.zeInit(0))
ctx, dev, lst, mod = open_device()
gemm, coop, indirect, recorded = (kernel(mod, n) for n in (b"gemm_v2", b"coop_v2", b"indirect_v2", b"recorded_v2"))
host = ctypes.create_string_buffer(64000)
buf = P(); check(ze.zeMemAllocDevice(ctx, ctypes.create_string_buffer(64), 1 << 20, 64, dev, ctypes.byref(buf)))
pool = P(); check(ze.zeEventPoolCreate(ctx, ctypes.byref(PoolDesc(0x10, None, 1, 4)), 0, None, ctypes.byref(pool)))
events = []
for i in range(4):
    ev = P(); check(ze.zeEventCreate(pool, ctypes.create_string_buffer(32), ctypes.byref(ev)))
    events.append(ev)
fill_ev, region_ev, lists_ev, barrier_ev = events

regular = P(); check(ze.zeCommandListCreate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(regular)))
for i in range(2):
    check(ze.zeCommandListAppendLaunchKernel(regular, recorded, ctypes.byref(GroupCount(3, 1, 1)), None, 0, None))  # marker: recorded
check(ze.zeCommandListClose(regular))
queue = P()
if not have_immediate:
    check(ze.zeCommandQueueCreate(ctx, dev, ctypes.create_string_buffer(64), ctypes.byref(queue)))

pattern = ctypes.c_uint32(0xdeadbeef)
groups_in_memory = GroupCount(6, 1, 1)  # the indirect launch's arguments (device memory on a GPU)
src_region, dst_region = CopyRegion(0, 0, 0, 256, 100, 0), CopyRegion(0, 0, 0, 256, 100, 0)
for step in range(3):
    check(ze.zeCommandListAppendMemoryFill(lst, buf, ctypes.byref(pattern), 4, 65536, fill_ev, 0, None))  # marker: fill
    check(ze.zeCommandListAppendLaunchKernelWithArguments(lst, gemm, GroupCount(20, 1, 1), GroupCount(64, 1, 1), None, None, None, 0, None) if have_args else ze.zeCommandListAppendLaunchKernel(lst, gemm, ctypes.byref(GroupCount(20, 1, 1)), None, 0, None))  # marker: launch
    check(ze.zeCommandListAppendLaunchCooperativeKernel(lst, coop, ctypes.byref(GroupCount(4, 1, 1)), None, 0, None))  # marker: cooperative
    check(ze.zeCommandListAppendLaunchKernelIndirect(lst, indirect, ctypes.byref(groups_in_memory), None, 0, None))  # marker: indirect
    check(ze.zeCommandListAppendMemoryCopyRegion(lst, host, ctypes.byref(dst_region), 256, 0, buf, ctypes.byref(src_region), 256, 0, region_ev, 0, None))  # marker: region
    check(ze.zeCommandListAppendMemoryCopy(lst, host, buf, 64000, None, 0, None))  # marker: copy
    if have_immediate:
        check(ze.zeCommandListImmediateAppendCommandListsExp(lst, 1, ctypes.byref(regular), lists_ev, 0, None))  # marker: execute
    else:
        check(ze.zeCommandQueueExecuteCommandLists(queue, 1, ctypes.byref(regular), None))  # marker: execute
        check(ze.zeCommandQueueSynchronize(queue, FOREVER))
    check(ze.zeCommandListAppendBarrier(lst, barrier_ev, 0, None))
    if have_list_sync:
        check(ze.zeCommandListHostSynchronize(lst, FOREVER))
    else:
        check(ze.zeEventHostSynchronize(barrier_ev, FOREVER))
    for ev in events:
        check(ze.zeEventHostReset(ev))
check(ze.zeCommandListDestroy(regular))
check(ze.zeMemFree(ctx, buf))
print("ze v2 done", int(have_args), int(have_immediate), int(have_list_sync))
