"""The listing's lines about tensor memory (gpu.tensor_memory, from
PyTorch's allocator history: lprof.collect.torch_memory)."""

from .memory_report import fmt_bytes


def _b(n):
    return fmt_bytes(n) or "0 B"


def summary(tensors):
    ts = tensors.get("stats", {})
    devices = ts.get("devices") or []
    where = ""
    if len(devices) == 1:
        where = f" on {devices[0]['device']}"
    elif devices:
        where = " (" + ", ".join(f"{d['device']} {_b(d.get('peak_bytes', 0))}" for d in devices) + ")"
    out = [
        f"  tensor memory (PyTorch's allocator history): peak {_b(ts.get('peak_bytes', 0))}{where}, "
        f"{_b(ts.get('live_bytes', 0))} live at exit"
    ]
    for d in devices or [dict(ts, device="")]:
        dev = f"{d['device']}: " if d.get("device") else ""
        if d.get("window_full"):
            out.append(
                f"    {dev}the history wrapped (only its latest {d.get('trace_entries', 0)} entries are "
                f"kept): tensors allocated and freed before them are not counted"
            )
        if not d.get("window_start_known", True):
            out.append(
                f"    {dev}the blocks have no addresses (an old torch): memory live before the "
                f"history's first entry is not counted in the peak"
            )
        if d.get("baseline_bytes"):
            rest = d["baseline_bytes"] - d.get("baseline_attributed_bytes", 0)
            out.append(
                f"    {dev}{_b(d['baseline_bytes'])} was live before the history's first entry: "
                f"{_b(d.get('baseline_attributed_bytes', 0))} of it charged to the lines that allocated it"
                + (f", {_b(rest)} to '[tensor memory allocated before the history began]'" if rest else "")
            )
        if d.get("backward_bytes"):
            out.append(
                f"    {dev}{_b(d['backward_bytes'])} allocated during backward (no Python frame) "
                f"charged to the lines that called backward"
            )
        if "allocator_peak_bytes" in d:
            name, theirs = d.get("allocator_counter", "peak"), d["allocator_peak_bytes"]
            if d.get("allocator_agrees"):
                out.append(f"    {dev}the allocator's own peak ({name}, {_b(theirs)}) agrees")
            else:
                why = ""
                if d.get("window_full") and d.get("peak_bytes", 0) < theirs:
                    why = ": the peak came before the history's window"
                out.append(
                    f"    {dev}the allocator's own peak ({name}) is {_b(theirs)}, lprof's replay of "
                    f"the history gives {_b(d.get('peak_bytes', 0))}: they disagree{why}"
                )
    return out
