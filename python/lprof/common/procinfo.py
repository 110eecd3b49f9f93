"""Which process this is: pid, parent, host, and the rank a launcher gave it.

Launchers say the rank in the environment they give each process; the first
variable found wins (torchrun's RANK first: torchrun under Slurm also sees
SLURM_PROCID, which then names the node's launcher step, not the worker)."""

import os

# (launcher, rank variable, world size variable, local rank variable)
LAUNCHERS = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("pmix", "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK"),
    ("pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
)


def _int(env, name):
    text = env.get(name) if name else None
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def rank_info(env=None):
    """{"rank", "world_size", "local_rank", "launcher"} from the first
    launcher whose rank variable holds a number; {} outside any launcher."""
    env = os.environ if env is None else env
    for launcher, rank_var, size_var, local_var in LAUNCHERS:
        rank = _int(env, rank_var)
        if rank is None:
            continue
        out = {"rank": rank, "launcher": launcher}
        size, local = _int(env, size_var), _int(env, local_var)
        if size is not None:
            out["world_size"] = size
        if local is not None:
            out["local_rank"] = local
        return out
    return {}


def status_field(name):
    """The value of one field of /proc/self/status ("TracerPid", "Umask"),
    as text; None where Linux does not say it."""
    key = name.encode() + b":"
    try:
        with open("/proc/self/status", "rb") as fh:  # bytes: no EncodingWarning
            for line in fh:
                if line.startswith(key):
                    return line[len(key) :].strip().decode("ascii", "replace")
    except OSError:
        pass
    return None


def identity():
    """The meta keys that say which process wrote a profile."""
    out = {"pid": os.getpid(), "ppid": os.getppid(), "hostname": os.uname().nodename}
    out.update(rank_info())
    return out


def short_host(hostname):
    """The host part of a file name: up to the first dot, file-name safe."""
    host = (hostname or "host").split(".", 1)[0]
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in host) or "host"


def rank_file_name(name, info=None):
    """`<name>.<host>.<rank>.lprof` for a ranked process, else
    `<name>.<host>.<pid>.lprof` (`name` without its .lprof)."""
    info = identity() if info is None else info
    tag = info.get("rank")
    tag = str(tag) if tag is not None else f"pid{info.get('pid', os.getpid())}"
    return f"{name}.{short_host(info.get('hostname'))}.{tag}.lprof"


def profile_path(outfile, outdir=None):
    """Where a run's profile goes. With --outdir: `<name>.<host>.<rank>.lprof`
    in that folder (created; the pid stands for the rank outside a launcher),
    name from -o or the default file name. Without it, under a launcher that
    started several ranks, the same name beside `outfile`: ranks sharing a
    folder must not overwrite each other's profile. Else `outfile` itself."""
    folder, name = os.path.split(outfile)
    if name.endswith(".lprof"):
        name = name[: -len(".lprof")]
    if outdir:
        try:
            os.makedirs(outdir, exist_ok=True)  # ranks create it concurrently
        except OSError as exc:
            from .errors import LprofError

            raise LprofError(f"--outdir {outdir}: cannot create it ({exc.strerror or exc})", 2) from None
        return os.path.join(outdir, rank_file_name(name))
    if rank_info().get("world_size", 0) <= 1:
        return outfile
    return os.path.join(folder, rank_file_name(name))
