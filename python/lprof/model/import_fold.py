"""Folding importlib's machinery out of stacks, for pictures (flame graphs).

An `import numpy` runs through about six frames of importlib's bootstrap
(`_find_and_load`, `_load_unlocked`, `exec_module`,
`_call_with_frames_removed`, ...) before numpy's own `<module>` frame, and
every nested import repeats them: a small numpy program's import tower is 60
frames high and pushes the program's own frames out of view. Here each run of
bootstrap frames and the module frame it leads to become one frame,
`import numpy`, at the module's line; a run that ends in the bootstrap itself
(finding or reading a module) becomes one `import (importlib)` frame.

Works on a trie of frame ids (the file's columnar form stores one), so a
large profile is folded without building a Python list per stack; the
stacks section's owner, lprof.model.stacks.fold_imports, hands it one."""

import os

from .frames import Frame, table as frame_table

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
        p = p[len(stdlib) :] if p.startswith(stdlib) else p.rsplit("/", 1)[-1]
    if p.endswith(".py"):
        p = p[:-3]
    if p.endswith("/__init__"):
        p = p[: -len("/__init__")]
    return p.strip("/").replace("/", ".") or path


def fold_trie(frames, parent, frame, folded):
    """Folds importlib's frames out of the trie of frame ids (parent, frame)
    into `folded` (an empty lprof.model.stacks.Trie): frames (a list of
    stored frames) gains the import frames; returns the image of each node,
    the folded node that a stack ending there ends at."""
    frame_ids = {tuple(f): i for i, f in enumerate(frames)}

    def frame_id(f):
        key = tuple(f)
        fid = frame_ids.get(key)
        if fid is None:
            fid = frame_ids[key] = len(frames)
            frames.append(list(f))
        return fid

    table = frame_table(frames)  # the frames the trie's nodes name (fold appends after them)
    node_of = folded.node_of
    finding = None
    image = [0] * len(parent)  # node -> folded node (stacks ending there)
    anchor = [None] * len(parent)  # inside a run: the folded node above it
    for n, (p, fid) in enumerate(zip(parent, frame)):
        f = table[fid]
        up = image[p] if p >= 0 else -1
        in_run = p >= 0 and anchor[p] is not None
        if f.file in BOOTSTRAP_FILES:
            if in_run:
                image[n], anchor[n] = image[p], anchor[p]
            else:
                if finding is None:
                    finding = frame_id([BOOTSTRAP_FILES[0], FINDING, 1, 0])
                anchor[n] = up
                image[n] = node_of((finding,), up)
        elif in_run and f.function == "<module>":
            image[n] = node_of((frame_id([f.file, f"import {module_name(f.file)}", 1, f.line]),), anchor[p])
        else:
            image[n] = node_of((fid,), up)
    return image


def has_imports(frames):
    return any(Frame.of(f).file in BOOTSTRAP_FILES for f in frames)
