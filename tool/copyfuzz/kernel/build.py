"""`copyfuzz kernel build`: a small bootable kernel, cached by everything that went in.

    kernel = build.build(root, build.Request(arch, source, replacements, fragment, jobs))

The configuration is `make tinyconfig`, then kernel/config/common.config and
kernel/config/<arch>.config, then the user's `--config` fragment, then `olddefconfig`;
every option asked for is checked afterwards (a tree that does not take one is an error
naming it). The build runs in a farm of links to the source (source.make_farm) with
`O=`, one work directory per architecture and source, so a second build that changes one
file (`--replace`) recompiles that file and links; the image is then copied into a cache
entry named by the key of its inputs:

    $(O)/kernel/images/<arch>-<key>/   image, config, build.log, inputs.json
    $(O)/kernel/work/<arch>-<source>/  farm/, obj/, state.json, lock

The key covers the source's identity, each replacement's path and content, the
fragments, the architecture, the compiler's version and this module's BUILD_FORMAT: a
second run with the same inputs does not build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .. import atomic, paths, procs, targets
from ..errors import CopyfuzzError
from . import source as sources

BUILD_FORMAT = 1  # bump when what this module puts into a kernel changes
CONFIG_DIR = Path(__file__).resolve().parents[3] / "kernel" / "config"


@dataclass(frozen=True)
class Request:
    arch: targets.Arch
    source: sources.Source
    replacements: tuple[tuple[str, bytes], ...] = ()  # (path in the tree, content), sorted
    fragment: str = ""  # the user's --config text
    fragment_name: str = ""
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)


@dataclass(frozen=True)
class Kernel:
    arch: targets.Arch
    image: Path
    config: Path
    log: Path
    key: str
    label: str  # for people: source, replacements
    cached: bool  # found in the cache, not built now


@dataclass(frozen=True)
class Option:
    name: str  # CONFIG_...
    value: str  # y, n, m, a number or a quoted string
    optional: bool  # applies only where the tree knows the option
    origin: str  # the fragment it came from


def boot(arch: targets.Arch) -> targets.KernelBoot:
    if arch.kernel is None:
        raise CopyfuzzError(f"--arch {arch.name}: no booted-kernel support")
    return arch.kernel


def cross_compile(arch: targets.Arch) -> str:
    """The kernel's cross compiler: the executors' (CROSS_COMPILE<suffix> from the
    environment, else target.mk's default, which builds 64-bit where there is a choice)."""
    boot(arch)  # an architecture without booted kernels is refused
    return arch.cross()


def parse_fragment(text: str, origin: str) -> list[Option]:
    """CONFIG_X=value lines, '# CONFIG_X is not set' (= n), comments and blank lines; our
    own fragments may mark a line optional with a leading '?'."""
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        optional = line.startswith("?")
        line = line.lstrip("?")
        if not line:
            continue
        if line.startswith("#"):
            words = line[1:].split()
            if len(words) == 4 and words[0].startswith("CONFIG_") and words[1:] == ["is", "not", "set"]:
                out.append(Option(words[0], "n", optional, origin))
            continue
        name, eq, value = line.partition("=")
        quoted = value.startswith('"') and value.endswith('"') and len(value) >= 2
        if (not eq or not name.startswith("CONFIG_") or not name[7:].replace("_", "").isalnum() or not value
                or (not quoted and any(c.isspace() or c == "#" for c in value))):
            raise CopyfuzzError(f"{origin}:{number}: not a kconfig line (CONFIG_NAME=value): {raw.strip()!r}")
        out.append(Option(name, value, optional, origin))
    return out


def _read_config(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            name, _, value = line.partition("=")
            values[name] = value
        elif line.startswith("# CONFIG_") and line.endswith(" is not set"):
            values[line[2:-11]] = "n"
    return values


def options(req: Request) -> list[Option]:
    """Our fragments' options, then the user's --config. A user's line takes the place of
    ours of the same name: one that contradicts a line of ours the VM needs was refused
    before (inputs.check); the others (marked ?) are ours to choose only by default."""
    opts = []
    for name in ("common.config", f"{req.arch.name}.config"):
        opts += parse_fragment((CONFIG_DIR / name).read_text(), f"kernel/config/{name}")
    if req.fragment:
        user = parse_fragment(req.fragment, req.fragment_name or "--config")
        named = {o.name for o in user}
        opts = [o for o in opts if o.name not in named] + user
    return opts


def _compiler_version(cross: str) -> str:
    try:
        r = subprocess.run([f"{cross}gcc", "--version"], capture_output=True, text=True)
    except OSError:
        r = None
    if r is None or r.returncode != 0:
        raise CopyfuzzError(f"{cross}gcc: not found (the kernel's cross compiler; CROSS_COMPILE sets its prefix)")
    return r.stdout.splitlines()[0]


def key(req: Request) -> str:
    h = hashlib.sha256()
    parts = [f"format={BUILD_FORMAT}", f"arch={req.arch.name}", f"source={req.source.identity}",
             f"cc={_compiler_version(cross_compile(req.arch))}"]
    parts += [f"opt={o.name}={o.value}{'?' if o.optional else ''}" for o in options(req)]
    parts += [f"replace={p}={hashlib.sha256(c).hexdigest()}" for p, c in req.replacements]
    h.update("\n".join(parts).encode())
    return h.hexdigest()[:20]


def kernel_dir(root: Path) -> Path:
    return paths.build_dir(root) / "kernel"


def _label(req: Request) -> str:
    extra = [f"{p} replaced" for p, _ in req.replacements]
    if req.fragment:
        extra.append(f"config {req.fragment_name or '--config'}")
    return req.source.label + (f", {', '.join(extra)}" if extra else "")


def cached(root: Path, req: Request) -> Kernel | None:
    k = key(req)
    entry = kernel_dir(root) / "images" / f"{req.arch.name}-{k}"
    if (entry / "inputs.json").is_file() and (entry / "image").is_file():
        return Kernel(req.arch, entry / "image", entry / "config", entry / "build.log", k, _label(req), True)
    return None


def build(root: Path, req: Request) -> Kernel:
    """The kernel for req: from the cache, else built now (progress on stderr)."""
    hit = cached(root, req)
    if hit:
        return hit
    k = key(req)
    base = kernel_dir(root)
    work = base / "work" / f"{req.arch.name}-{hashlib.sha256(str(req.source.root).encode()).hexdigest()[:12]}"
    held = atomic.try_lock(work / "lock")
    if held is None:
        print(f"copyfuzz: waiting for another copyfuzz run building this {req.arch.name} kernel "
              f"({work / 'lock'})", file=sys.stderr, flush=True)
    else:
        os.close(held)
    with atomic.locked(work / "lock"):
        hit = cached(root, req)  # built meanwhile by a concurrent run
        if hit:
            return hit
        state_file = work / "state.json"
        try:
            state = json.loads(state_file.read_text())
            if not isinstance(state, dict):
                state = {}
        except (OSError, ValueError):
            state = {}
        farm, obj = work / "farm", work / "obj"
        copied_before = {c for c in state.get("copied", []) if isinstance(c, str)}
        if not req.source.owned or state.get("farm") != req.source.identity or not farm.is_dir():
            sources.make_farm(req.source.root, farm)
            # A path replaced by an earlier build is now a link again, with the original's old
            # time: make would keep the objects built from the replacement. It is written as a
            # file of its own below, with a new time.
            state = {"farm": req.source.identity, "copied": sorted(copied_before), "fresh": True}
        copied = _place_replacements(req, farm, copied_before)
        state.pop("fresh", None)
        state["copied"] = sorted(copied)
        atomic.write(state_file, json.dumps(state))
        obj.mkdir(parents=True, exist_ok=True)
        log = work / "build.log"
        started = time.monotonic()
        with open(log, "w") as logf:
            _configure(req, farm, obj, logf, state, state_file)
            image = _make(req, farm, obj, logf, log)
        entry = base / "images" / f"{req.arch.name}-{k}"
        tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        shutil.copyfile(image, tmp / "image")
        shutil.copyfile(obj / ".config", tmp / "config")
        shutil.copyfile(log, tmp / "build.log")
        inputs = {"arch": req.arch.name, "source": req.source.label, "identity": req.source.identity,
                  "replacements": {p: hashlib.sha256(c).hexdigest() for p, c in req.replacements},
                  "config": req.fragment_name, "compiler": _compiler_version(cross_compile(req.arch)),
                  "seconds": round(time.monotonic() - started, 1)}
        (tmp / "inputs.json").write_text(json.dumps(inputs, indent=1) + "\n")
        shutil.rmtree(entry, ignore_errors=True)
        os.replace(tmp, entry)
        return Kernel(req.arch, entry / "image", entry / "config", entry / "build.log", k, _label(req), False)


def _place_replacements(req: Request, farm: Path, copied: set[str]) -> set[str]:
    """Each replaced path gets the replacement's content; each path replaced before but not
    now gets the original's back. Both as regular files written only when their content
    changes, so make's timestamps rebuild exactly what changed."""
    wanted = dict(req.replacements)
    for rel in sorted(copied | set(wanted)):
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            continue  # not ours: state.json is never trusted to name a path outside the farm
        original = req.source.root / rel
        if rel in wanted:
            content = wanted[rel]
        elif original.is_file():
            content = original.read_bytes()
        else:  # gone from the tree since
            (farm / rel).unlink(missing_ok=True)
            continue
        target = farm / rel
        if target.parent.resolve() != (farm.resolve() / rel).parent:
            raise CopyfuzzError(f"{rel}: a directory on its path is a symbolic link in the tree; a replacement "
                                "is never written through one")
        if not target.is_symlink() and target.is_file() and target.read_bytes() == content:
            continue
        target.unlink(missing_ok=True)
        target.write_bytes(content)
    return copied | set(wanted)


def _kbuild(req: Request, farm: Path, obj: Path, *targets_: str, jobs: int = 1) -> list[str]:
    return ["make", "-C", str(farm), f"O={obj}", f"ARCH={boot(req.arch).make_arch}",
            f"CROSS_COMPILE={cross_compile(req.arch)}", f"-j{jobs}", *targets_]


def _configure(req: Request, farm: Path, obj: Path, logf: IO[str], state: dict[str, object],
               state_file: Path) -> None:
    opts = options(req)
    config_key = hashlib.sha256("\n".join(f"{o.name}={o.value}{o.optional}" for o in opts).encode()).hexdigest()
    config = obj / ".config"
    if state.get("config") == config_key and config.is_file():
        return
    _step(req, _kbuild(req, farm, obj, "tinyconfig"), logf, "make tinyconfig")
    with open(config, "a") as f:
        f.write("\n# copyfuzz\n" + "".join(
            f"# {o.name} is not set\n" if o.value == "n" else f"{o.name}={o.value}\n" for o in opts))
    _step(req, _kbuild(req, farm, obj, "olddefconfig"), logf, "make olddefconfig")
    got = _read_config(config)
    refused = [o for o in opts if not _holds(o, got)]
    if refused:
        state.pop("config", None)
        atomic.write(state_file, json.dumps(state))
        raise CopyfuzzError(
            f"the kernel's configuration did not take {', '.join(f'{o.name}={o.value}' for o in refused)} "
            f"(from {', '.join(sorted({o.origin for o in refused}))}): a missing dependency, or an option "
            "this tree does not have", details="\n".join(
                f"  {o.name}: asked {o.value}, got {got.get(o.name, 'nothing (unknown or not visible)')}"
                for o in refused))
    state["config"] = config_key
    atomic.write(state_file, json.dumps(state))


def _holds(o: Option, got: dict[str, str]) -> bool:
    actual = got.get(o.name)
    if o.value == "n":
        return actual in (None, "n")
    if actual is None and o.optional:
        return True
    return actual == o.value


def _step(req: Request, argv: list[str], logf: IO[str], what: str) -> None:
    logf.write(f"$ {' '.join(argv)}\n")
    logf.flush()
    r = procs.run(argv, stdout=logf, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise CopyfuzzError(f"kernel build ({req.arch.name}): {what} failed; log: {logf.name}",
                            details=_tail(Path(logf.name)))


def _tail(log: Path, lines: int = 25) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _make(req: Request, farm: Path, obj: Path, logf: IO[str], log: Path) -> Path:
    """make the image, its output into the log; a line of progress on stderr."""
    target = boot(req.arch).image
    argv = _kbuild(req, farm, obj, target, jobs=req.jobs)
    logf.write(f"$ {' '.join(argv)}\n")
    logf.flush()
    tty = sys.stderr.isatty()
    started = last = time.monotonic()
    steps = 0
    proc = procs.popen(argv, new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            logf.write(raw.decode(errors="replace"))
            steps += 1
            now = time.monotonic()
            if tty and now - last >= 0.5:
                print(f"\rcopyfuzz: building the {req.arch.name} kernel: {steps} steps, "
                      f"{now - started:.0f} s", end="", file=sys.stderr, flush=True)
                last = now
            elif not tty and now - last >= 30:
                print(f"copyfuzz: building the {req.arch.name} kernel: {steps} steps, {now - started:.0f} s",
                      file=sys.stderr, flush=True)
                last = now
        code = proc.wait()
    except BaseException:
        procs.kill_group(proc)
        raise
    finally:
        logf.flush()
    if tty:
        print(file=sys.stderr)
    if code != 0:
        raise CopyfuzzError(f"kernel build ({req.arch.name}, {_label(req)}) failed; log: {log}", details=_tail(log))
    image = obj / "arch" / boot(req.arch).make_arch / "boot" / target
    if not image.is_file():
        raise CopyfuzzError(f"kernel build ({req.arch.name}) made no {image}; log: {log}", details=_tail(log))
    print(f"copyfuzz: built the {req.arch.name} kernel in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return image


def ensure_packages(root: Path) -> None:
    """What building and booting kernels needs (qemu-system, opensbi, flex, bison, bc):
    scripts/deps.sh kernel installs what is missing (silent when all is there)."""
    r = procs.run(["sh", str(root / "scripts" / "deps.sh"), "kernel"], stdout=sys.stderr, stderr=subprocess.PIPE,
                  text=True)
    if r.returncode != 0:
        raise CopyfuzzError("the packages for building and booting kernels are missing",
                            details=(r.stderr or "").strip()[-2000:])
