"""Folding importlib's machinery out of stacks, for pictures (flame graphs).

An `import numpy` runs through about six frames of importlib's bootstrap
(`_find_and_load`, `_load_unlocked`, `exec_module`,
`_call_with_frames_removed`, ...) before numpy's own `<module>` frame, and
every nested import repeats them: a small numpy program's import tower is 60
frames high and pushes the program's own frames out of view. Here each run of
bootstrap frames and the module frame it leads to become one frame,
`import numpy`, at the module's line; a run that ends in the bootstrap itself
(finding or reading a module) becomes one `import (importlib)` frame.

Works on the file's columnar form (a trie of frame ids), so a large profile
is folded without building a Python list per stack; row-form sections go
through it too (fold_section)."""
import os

BOOTSTRAP_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
FINDING = "import (importlib)"


def module_name(path):
    """Dotted module name guessed from a file path: the part after
    site-packages (or the standard library's folder), else the file name."""
    p = path.replace(os.sep, "/")
    for cut in ("/site-packages/", "/dist-packages/"):
        if cut in p:
            p = p.rsplit(cut, 1)[1]
            break
    else:
        stdlib = os.path.dirname(os.__file__).replace(os.sep, "/") + "/"
        p = p[len(stdlib):] if p.startswith(stdlib) else p.rsplit("/", 1)[-1]
    if p.endswith(".py"):
        p = p[:-3]
    if p.endswith("/__init__"):
        p = p[:-len("/__init__")]
    return p.strip("/").replace("/", ".") or path


def fold_columns(st):
    """A copy of a columnar stacks section ({"frames", "nodes", "rows", ...})
    with importlib's frames folded. Rows keep their order and values."""
    frames = [list(f) for f in st["frames"]]
    frame_ids = {tuple(f): i for i, f in enumerate(frames)}

    def frame_id(f):
        key = tuple(f)
        fid = frame_ids.get(key)
        if fid is None:
            fid = frame_ids[key] = len(frames)
            frames.append(list(f))
        return fid

    finding = None
    parent, frame = st["nodes"]["parent"], st["nodes"]["frame"]
    new_parent, new_frame, children = [], [], {}

    def child(of, fid):
        key = (of, fid)
        node = children.get(key)
        if node is None:
            node = children[key] = len(new_parent)
            new_parent.append(of)
            new_frame.append(fid)
        return node

    image = [0] * len(parent)     # node -> folded node (rows ending there)
    anchor = [None] * len(parent)  # inside a run: the folded node above it
    for n, (p, fid) in enumerate(zip(parent, frame)):
        f = frames[fid]
        up = image[p] if p >= 0 else -1
        in_run = p >= 0 and anchor[p] is not None
        if f[0] in BOOTSTRAP_FILES:
            if in_run:
                image[n], anchor[n] = image[p], anchor[p]
            else:
                if finding is None:
                    finding = frame_id([BOOTSTRAP_FILES[0], FINDING, 1, 0])
                anchor[n] = up
                image[n] = child(up, finding)
        elif in_run and f[1] == "<module>":
            image[n] = child(anchor[p], frame_id([f[0], f"import {module_name(f[0])}", 1, f[3]]))
        else:
            image[n] = child(up, fid)
    rows = dict(st["rows"])
    rows["node"] = [image[n] for n in st["rows"]["node"]]
    return dict(st, frames=frames, nodes={"parent": new_parent, "frame": new_frame}, rows=rows)


def has_imports(frames):
    return any(f[0] in BOOTSTRAP_FILES for f in frames)


def fold_section(section):
    """The same for a row-form section ({"frames", "stacks": [[ids, thread, m]]})."""
    if not has_imports(section.get("frames", [])):
        return section
    from .profile_file import _stacks_to_columns, stacks_from_columns
    return stacks_from_columns(fold_columns(_stacks_to_columns(section)))
