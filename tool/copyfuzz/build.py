"""Finding the tools and building executors through the Makefile.

The Makefile is the one place that knows how to build; this module only checks that
its tools exist (so a missing one gets one line naming the fix, not a make error) and
runs `make -s <targets>` at the repository root.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable

from . import atomic, checkfile, infer, paths, targets
from .errors import CopyfuzzError
from .files import file_digest

if TYPE_CHECKING:
    from .routines import Routine

INSTALL_HINT = "run 'make deps' to install it (qemu-user, gcc-riscv64-linux-gnu, gcc-aarch64-linux-gnu, ...)"


def qemu_command(xlen: int, arch: str) -> list[str]:
    return targets.get(arch).qemu_command(xlen)


def native(xlen: int, arch: str) -> bool:
    """riscv64 hosts run RV64 executors directly, aarch64 hosts arm64 ones; RV32 ones
    still go through QEMU."""
    return targets.get(arch).native(xlen)


def routine_native(r: "Routine") -> bool:
    """Does this routine's executor run without QEMU here (so without the plugin)?"""
    return native(r.xlen, r.arch)


def routine_prefix(r: "Routine") -> list[str]:
    """What goes before a routine's executor: QEMU with the -cpu of its ISA (isa.py)."""
    if routine_native(r):
        return []
    cpu = r.qemu_cpu
    return qemu_command(r.xlen, r.arch) + (["-cpu", cpu] if cpu else [])


def check_cpu(r: "Routine") -> "Routine":
    """--cpu names a CPU model the routine's QEMU has (`QEMU -cpu help`); the routine back."""
    if not r.cpu:
        return r
    if routine_native(r):
        raise CopyfuzzError(f"--cpu {r.cpu}: {r.arch} routines run natively here, without QEMU")
    qemu = qemu_command(r.xlen, r.arch)
    check_tools([qemu[0]])
    try:
        out = subprocess.run([*qemu, "-cpu", "help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CopyfuzzError(f"cannot ask {qemu[0]} for its CPUs: {e}") from None
    models = {line.split()[0] for line in out.splitlines() if line.strip() and not line.endswith(":")}
    if r.cpu.partition(",")[0] not in models:
        raise CopyfuzzError(f"--cpu {r.cpu}: {qemu[0]} has no such CPU (`{qemu[0]} -cpu help` lists them: "
                            f"{', '.join(sorted(models)[:8])}, ...)")
    return r


def required_tools(xlen: int, arch: str) -> list[str]:
    tools = ["make", f"{targets.get(arch).cross()}gcc"]
    if not native(xlen, arch):
        tools.append(qemu_command(xlen, arch)[0])
    return tools


def check_tools(tools: list[str]) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            given = _given_by(tool)
            if given:  # the user's choice, not a package to install
                raise CopyfuzzError(f"'{tool}' not found (from {given}={os.environ[given]!r}): set {given} to "
                                    "one that exists, or unset it for the default")
            raise CopyfuzzError(f"'{tool}' not found: {INSTALL_HINT}")


def _given_by(tool: str) -> str | None:
    """The environment variable (QEMU, CROSS_COMPILE_ARM64, ...) a tool's name came from."""
    for a in targets.ARCHES.values():
        for name in (f"QEMU{a.env_suffix}", f"CROSS_COMPILE{a.env_suffix}"):
            value = os.environ.get(name, "")
            if value.strip() and (value.split()[0] == tool or (name.startswith("CROSS") and tool.startswith(value))):
                return name
    return None


def check_runner(xlen: int, arch: str) -> None:
    """Enough to run an already-built executor."""
    if not native(xlen, arch):
        check_tools([qemu_command(xlen, arch)[0]])


def check_runners(routines: "list[Routine]") -> None:
    """check_runner for each architecture and width among the routines."""
    for xlen, arch in sorted({(r.xlen, r.arch) for r in routines}):
        check_runner(xlen, arch)


# What building one file from outside the tree may use (each process of it: the
# preprocessor, the assembler, the linker): a file that includes /dev/zero, or a
# generated one of millions of lines, stops at these with an error, not at the machine's.
OUTSIDE_BUILD_MEMORY = 4 << 30  # bytes of address space
OUTSIDE_BUILD_CPU_S = 300
OUTSIDE_BUILD_FILE = 1 << 30  # bytes of any file it writes


def _outside_build_limits() -> None:
    """preexec_fn of an outside file's build: the limits above (inherited by its children)."""
    resource.setrlimit(resource.RLIMIT_AS, (OUTSIDE_BUILD_MEMORY, OUTSIDE_BUILD_MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (OUTSIDE_BUILD_CPU_S, OUTSIDE_BUILD_CPU_S))
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTSIDE_BUILD_FILE, OUTSIDE_BUILD_FILE))


MAKE_STATE = ("MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKELEVEL", "MAKEOVERRIDES")


def _run(root: Path, argv: list[str], what: str, env: dict[str, str] | None = None,
         on_status: "dict[int, Callable[[str], CopyfuzzError]] | None" = None, limited: bool = False) -> str:
    """Run a build step at the repository root; on failure, its output is the details
    (or, for an exit status in on_status, the error that function makes of the output).
    limited: under the outside-build limits."""
    # A make of the caller's (MAKEFLAGS=n, q or t: nothing built, and a stale executor
    # run as if it were the source) must not reach the tool's own builds.
    env = {k: v for k, v in (os.environ if env is None else env).items() if k not in MAKE_STATE}
    # The output goes to a file and is read back bounded: a file of millions of bad lines
    # makes that many error messages, which must not become the tool's memory or stderr.
    with tempfile.TemporaryFile() as log:
        try:
            proc = subprocess.run(argv, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, preexec_fn=_outside_build_limits if limited else None)
        except OSError as e:
            raise CopyfuzzError(f"cannot run {argv[0]}: {e.strerror}") from e
        output = _bounded(log)
    if on_status and proc.returncode in on_status:
        raise on_status[proc.returncode](output)
    if proc.returncode != 0:
        raise CopyfuzzError(f"build failed ({what}, exit {proc.returncode})", details=output.rstrip())
    return output


BUILD_OUTPUT_SHOWN = 64 << 10  # bytes of a build step's output kept at each end


def _bounded(log: IO[bytes]) -> str:
    """A build step's output (text): whole up to twice BUILD_OUTPUT_SHOWN bytes, else its
    head and tail with what was cut said between them."""
    size = log.seek(0, os.SEEK_END)
    log.seek(0)
    if size <= 2 * BUILD_OUTPUT_SHOWN:
        return log.read().decode(errors="replace")
    head = log.read(BUILD_OUTPUT_SHOWN)
    log.seek(size - BUILD_OUTPUT_SHOWN)
    tail = log.read()
    cut = size - len(head) - len(tail)
    return (head.decode(errors="replace") + f"\n[... {cut:,} bytes of output cut ...]\n"
            + tail.decode(errors="replace"))


def build(root: Path, targets_: list[str], xlen: int, arch: str) -> None:
    """make -s the targets of one architecture and width; on failure, make's own output is
    the message's details."""
    if not targets_:
        return
    check_tools(required_tools(xlen, arch))
    shown = " ".join(targets_) if len(targets_) <= 4 else f"{len(targets_)} executors"
    _run(root, ["make", "-s", *paths.make_vars(root), *targets.get(arch).make_vars(xlen), *targets_],
         f"make -s {shown}")


def build_host(root: Path, targets_: list[str]) -> None:
    """make -s targets that run on this machine (the plugin, libcfref.so, the fuzz drivers),
    of no architecture: only make and the host's compiler take part."""
    check_tools(["make"])
    # The Makefile parses one architecture's rules whatever the target: the default one's,
    # given on the command line so that an exported ARCH or XLEN (a kernel developer's
    # habit) never reaches it.
    arch = targets.DEFAULT
    _run(root, ["make", "-s", *paths.make_vars(root), *arch.make_vars(arch.widths[0]), *targets_],
         f"make -s {' '.join(targets_)}")


def link_env(root: Path, xlen: int, arch: str) -> dict[str, str]:
    """The environment harness/link-executor.sh runs in (the toolchain, from the Makefile:
    `make link-env`, which also builds the harness object)."""
    check_tools(required_tools(xlen, arch))
    a = targets.get(arch)
    out = _run(root, ["make", "-s", *paths.make_vars(root), *a.make_vars(xlen), "link-env"],
               f"make -s ARCH={arch} XLEN={xlen} link-env")
    env = dict(os.environ)
    for line in out.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.startswith("CF_LINK_"):
            env[name] = value
    return env


def link_external(root: Path, r: "Routine", env: dict[str, str]) -> None:
    """Link a file from outside the tree with the one link recipe, every name an argument:
    nothing in a path reaches make's parser or a shell. A file that does not build is
    explained (where its includes come from); one that builds but is not this routine
    (exit 3: a missing or data symbol, undefined references) gets the recipe's one line.
    An executor whose every input is as it was when it was linked is not linked again
    (its stamp: `_stamp`)."""
    assert r.external_elf is not None
    harness = paths.harness_object(paths.REL, r.xlen, r.arch)
    elf = root / r.external_elf
    argv = ["bash", LINK_RECIPE[0], *r.link_args, "--", str(harness), str(r.path), r.external_elf, r.name,
            r.symbol, r.kind, *r.asflags]
    fingerprint = _link_fingerprint(root, argv, env)
    if not _stamped(root, elf, fingerprint):
        deps = elf.with_name(f".{elf.name}.{os.getpid()}-{secrets.token_hex(4)}.deps")
        started_ns = time.time_ns()
        try:
            _run(root, [*argv[:2], "--deps", str(deps), *argv[2:]], f"harness/link-executor.sh {r.path.name}", env,
                 on_status={3: lambda out: checkfile.explain_link_failure(out, r)}, limited=True)
            _stamp(root, elf, fingerprint, deps, started_ns)
        except CopyfuzzError as e:
            if e.details:  # the recipe's own output: the file did not build
                raise explain(e, r, root) from e
            raise
        finally:
            deps.unlink(missing_ok=True)
    from . import elfinfo  # on use: the CLI imports this module, elfinfo pyelftools

    if r.arch == "arm" and elfinfo.is_thumb(elf, r.symbol):
        raise CopyfuzzError(f"{r.name.rpartition(':')[0]}: {r.symbol} is Thumb code: copyfuzz decodes, audits "
                            "and lists 32-bit ARM (A32) only, so it would judge instructions it cannot read; "
                            "build the file as ARM (without .thumb, or CONFIG_THUMB2_KERNEL off)")


# The link of a file from outside the tree, skipped when nothing it read has changed (a
# `check` run again on one file, each repro of its cases). Its stamp, beside the
# executor, holds what decides that: a fingerprint of the command, the toolchain's
# variables and binary, the recipe and the harness object; the executor's own digest
# (a file changed or cut short since is no match); and the digest of every file the
# compiler read (its -MD rules). Anything missing, unreadable or different: linked again.
LINK_RECIPE = ("harness/link-executor.sh", "harness/extable-format.sh")
STAMP_VERSION = 1


def _link_fingerprint(root: Path, argv: list[str], env: dict[str, str]) -> str:
    h = hashlib.sha256()
    toolchain = sorted((k, v) for k, v in env.items() if k.startswith("CF_LINK_"))
    words = env.get("CF_LINK_CC", "").split()
    cc = shutil.which(words[0]) if words else None  # a compiler upgraded in place changes the stamp too
    identity = [cc, file_digest(Path(cc))] if cc else None
    harness = argv[argv.index("--") + 1]
    files = [file_digest(root / name) for name in (*LINK_RECIPE, harness)]
    h.update(json.dumps([STAMP_VERSION, argv, toolchain, identity, files]).encode())
    return h.hexdigest()


def make_prerequisites(text: str) -> list[str] | None:
    """The prerequisites of gcc's -MD rules (make's syntax: backslash-newline goes on,
    '\\ ' is a blank in a name, '$$' a dollar); None if a rule is not `TARGET: FILES`."""
    out: list[str] = []
    for rule in text.replace("\\\n", " ").splitlines():
        words = re.findall(r"(?:\\.|[^\s\\])+", rule)
        if not words:
            continue
        if not words[0].endswith(":"):
            return None
        out += [re.sub(r"\\(.)", r"\1", w).replace("$$", "$") for w in words[1:]]
    return out


def _stamped(root: Path, elf: Path, fingerprint: str) -> bool:
    try:
        stamp = json.loads(Path(f"{elf}.stamp").read_text())
        if stamp["fingerprint"] != fingerprint or stamp["elf"] != file_digest(elf):
            return False
        return all(file_digest(root / name) == digest for name, digest in stamp["deps"].items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


MTIME_SLACK_NS = 2 * 10**9  # a file's mtime is coarse (the kernel's tick): read as "maybe during the link"


def _stamp(root: Path, elf: Path, fingerprint: str, deps: Path, started_ns: int) -> None:
    """Stamp a fresh executor with what it was built from, unless a file it read may have
    changed while it was built (then no stamp: the next run links again)."""
    try:
        names = make_prerequisites(deps.read_text())
        if names is None:
            return
        digests: dict[str, str] = {}
        for name in dict.fromkeys(names):
            if os.stat(root / name).st_mtime_ns >= started_ns - MTIME_SLACK_NS:
                return
            digest = file_digest(root / name)
            if not digest:
                return
            digests[name] = digest
    except OSError:
        return
    elf_digest = file_digest(elf)
    if elf_digest:
        atomic.write(Path(f"{elf}.stamp"), json.dumps({"fingerprint": fingerprint, "elf": elf_digest,
                                                        "deps": digests}))


def explain(e: CopyfuzzError, r: "Routine", root: Path) -> CopyfuzzError:
    """A file's routine that did not build: which file failed, and why (checkfile)."""
    withs = r.with_files
    return checkfile.explain_build_failure(e, Path(r.name.rpartition(":")[0]), r.arch, root, withs)


def object_spans(root: Path, r: "Routine", names: tuple[str, ...],
                 link_args: "tuple[str, ...] | None" = None) -> dict[str, list[tuple[int, int, int]]]:
    """Where each of names is defined in the object the one link recipe builds from the
    routine's file with its flags (and link_args' --with files: the routine's own by
    default): (section index, start, end), end = start + its ELF size (at least 1). A file
    that does not build fails here as the link would."""
    from .elfinfo import symbol_places  # on use: the CLI imports this module

    assert r.external_elf is not None
    env = link_env(root, r.xlen, r.arch)
    out = root / f"{r.external_elf}.{os.getpid()}.symbols.o"
    args = r.link_args if link_args is None else link_args
    try:
        _run(root, ["bash", "harness/link-executor.sh", "--object", *args, "--", "-", str(r.path),
                    str(out), "-", "-", "-", *r.asflags], f"harness/link-executor.sh --object {r.path.name}", env,
             limited=True)
    except CopyfuzzError as e:
        if e.details:
            raise explain(e, r, root) from e
        raise
    try:
        places = symbol_places(out, names)
    finally:
        out.unlink(missing_ok=True)
    return {name: [(shndx, start, start + max(size, 1)) for shndx, start, size in at] for name, at in places.items()}


def share_code(root: Path, r: "Routine", names: tuple[str, str]) -> bool:
    """Do both names label code of one body in the routine's file: the same address, or
    ranges (their ELF sizes) that overlap, as ENTRY(a) ENTRY(b) with padding between
    gives? False when either is not defined there."""
    spans = object_spans(root, r, names)
    return any(s1 == s2 and a1 < b2 and a2 < b1
               for s1, a1, b1 in spans.get(names[0], []) for s2, a2, b2 in spans.get(names[1], []))


def glue_files(root: Path, r: "Routine") -> list[Path]:
    """copyfuzz's models of the kernel's glue linked with the routine (harness/compat's
    riscv_v_helpers.c, __memzero): code of ours, not of the file."""
    return [w for w in r.with_files
            if w.name in checkfile.MODELLED and w.resolve().is_relative_to((root / "harness/compat").resolve())]


def in_glue(root: Path, r: "Routine", name: str) -> Path | None:
    """The model of the glue that defines or names this function, if one does."""
    pattern = re.compile(rf"(?<![\w.$]){re.escape(name)}(?![\w.$])")
    return next((g for g in glue_files(root, r) if pattern.search(g.read_text(errors="replace"))), None)


def check_not_glue(root: Path, r: "Routine") -> "Routine":
    """A symbol that only copyfuzz's model of the kernel's glue defines (the weak C of
    riscv_v_helpers.c, __memzero) is not the file's routine: refused, rather than checking
    copyfuzz's own stand-in as the file's code. The routine back."""
    glue = [("--with", str(g)) for g in glue_files(root, r)]
    if not glue or not any(re.search(rf"(?<![\w.$]){re.escape(r.symbol)}(?![\w.$])",
                                     Path(a).read_text(errors="replace")) for _, a in glue):
        return r
    own = tuple(x for pair in r.link_pairs if pair not in glue for x in pair)
    if r.symbol not in object_spans(root, r, (r.symbol,), own):
        raise CopyfuzzError(f"{r.path}: {r.symbol} is not defined by the file: only copyfuzz's model of the "
                            f"kernel's glue ({', '.join(Path(a).name for _, a in glue)}) defines it, a stand-in "
                            "for code the kernel has elsewhere: name a routine of the file")
    return r


def build_routines(root: Path, routines: "list[Routine]") -> None:
    """Build every routine's executor: bundled ones in one make per architecture and
    width, files from outside the tree (copyfuzz check) by harness/link-executor.sh, after
    one make per architecture and width for the harness and the toolchain."""
    by_target: dict[tuple[str, int], list[str]] = {}
    envs: dict[tuple[str, int], dict[str, str]] = {}
    for r in routines:
        key = (r.arch, r.xlen)
        if r.external_elf:
            if key not in envs:
                envs[key] = link_env(root, r.xlen, r.arch)
            link_external(root, r, envs[key])
            infer.say(r.symbol, r.arch_reason, r.kind_reason)
        else:
            by_target.setdefault(key, []).append(r.elf)
    for (arch, xlen), elfs in by_target.items():
        build(root, elfs, xlen, arch)
