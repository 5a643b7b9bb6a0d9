"""`copyfuzz bench ROUTINE [--vs ROUTINE2]`: what a copy routine costs.

Per cell (direction x offset x size, small sizes, and a workload mix):
  - instructions per byte, loads, stores, misaligned accesses and taken branches,
    vector instructions and the bytes each vector load or store moved (the plugin),
    counted by the QEMU plugin: deterministic, bit-identical from run to run;
  - wall-clock MiB/s of the same case repeated through `executor serve --bare`
    (no oracle), labelled "emulated" under QEMU and real on RISC-V hardware, where
    the plugin counts are unavailable and shown as "-".
The directions follow the kernel: copy_from_user reads a user source, so its rows
move the source offset (the kernel buffer stays aligned); copy_to_user moves the
destination offset. clear and memset have only destination rows (memset fills 0xa5).
memmove's two groups are its two directions on buffers overlapping by half: forward
(dst below src, src at the offset) and backward (dst above src, dst at the offset);
its small sizes and mix use buffers apart (forward, src above dst).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from . import build, files, records
from .errors import CopyfuzzError
from .options import TargetCommandOptions
from .routines import Routine
from .selection import bundled_routines, file_routines
from .session import Need, Session, plugin_runs
from .spec import Spec
from .ui import emit, new_table, stdout_console

BIG_SIZES = (8192, 16384, 32768)
SMALL_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# A memcpy-like workload (shared/reference anchors: SPEC2017 on Arm, 80% of calls
# <= 128 B, 34% exactly 32 B; source alignment 8+ for ~89% of calls): (n, src_off, weight).
MIX = ((32, 0, 30), (32, 4, 4), (16, 0, 8), (8, 0, 6), (64, 0, 10), (128, 0, 10), (128, 2, 2),
       (24, 1, 2), (256, 0, 8), (512, 0, 7), (1024, 0, 6), (1024, 4, 1), (4096, 0, 4), (100, 3, 2))


@dataclass(frozen=True)
class Cell:
    group: str  # "from" | "to" | "small" | "mix"
    n: int
    src_off: int
    dst_off: int
    weight: int = 1
    disp: int = 0  # memmove: dst - src

    @property
    def label(self) -> str:
        if self.disp:
            return f"{self.group} src+{self.src_off} dst+{self.dst_off} disp{self.disp:+d}"
        if self.group == "from":
            return f"from_user src+{self.src_off}"
        if self.group == "to":
            return f"to_user dst+{self.dst_off}"
        return f"{self.group} src+{self.src_off} dst+{self.dst_off}"


BENCH_FILL = 0xA5  # memset's fill value in every cell
MEMMOVE_TITLES = {"from": "memmove forward (dst below src, overlapping by half; src at offset)",
                  "to": "memmove backward (dst above src, overlapping by half; dst at offset)"}


def _memmove_cells(sizes: tuple[int, ...], small: bool, mix: bool) -> list[Cell]:
    """Half-overlapping buffers in both directions; src_off and dst_off are the
    misalignments (the other buffer stays aligned for sizes that are multiples of 16)."""
    out: list[Cell] = []
    for n in sizes:
        out += [Cell("from", n, off, 0, disp=-(n // 2 + off)) for off in range(8)]  # forward
        out += [Cell("to", n, (-(n // 2)) % records.PAGE_SIZE, off, disp=n // 2 + off) for off in range(8)]
    if small:
        for n in SMALL_SIZES:
            out += [Cell("small", n, n + 8, 0, disp=-(n + 8)), Cell("small", n, n + 11, 0, disp=-(n + 11))]
    if mix:
        out += [Cell("mix", n, (n + 16 - so) % records.PAGE_SIZE, 0, w, disp=-(n + 16 - so)) for n, so, w in MIX]
    return out


def cells(kind: str, sizes: tuple[int, ...], small: bool, mix: bool) -> list[Cell]:
    if kind == "memmove":
        return _memmove_cells(sizes, small, mix)
    has_src = kind in records.HAS_SRC
    out: list[Cell] = []
    for n in sizes:
        if has_src:
            out += [Cell("from", n, off, 0) for off in range(8)]
        out += [Cell("to", n, 0, off) for off in range(8)]
    if small:
        for n in SMALL_SIZES:
            out += [Cell("small", n, 0, 0), Cell("small", n, 3 if has_src else 0, 0 if has_src else 3)]
    if mix:
        out += [Cell("mix", n, so if has_src else 0, 0 if has_src else so, w) for n, so, w in MIX]
    return out


def _case(cell: Cell, kind: str, profile: str, case_id: int) -> records.Case:
    """A bench cell as a case record: no fault on either side."""
    spec = Spec("bench", kind, cell.n, cell.src_off if kind in records.HAS_SRC else 0, None, cell.dst_off, None,
                fill=BENCH_FILL if kind == "memset" else 0, disp=cell.disp)
    return spec.to_case(profile, case_id)


def measure(root: Path, routine: Routine, plan: list[Cell], reps: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    counts: list[dict[str, int] | None] = [None] * len(plan)
    # The counts come from the plugin (with its memory audit: a bench case must be clean
    # under it too); natively there is none, and the bench only times.
    if plugin_runs(routine):
        with Session(root, routine, Need.MEMCHECK) as server:
            plugin = server.plugin
            assert plugin is not None
            for i, cell in enumerate(plan):
                result = server.run(_case(cell, routine.kind, routine.profile, i))
                if result.type != records.RESULT_CASE or result.errors:
                    raise CopyfuzzError(f"{routine.name}: the bench case {cell.label} n={cell.n} is not "
                                        f"clean ({', '.join(records.class_names(result.errors))}): "
                                        "sweep it first")
                counts[i] = plugin.shm.now.as_dict()
    with Session(root, routine, bare=True) as bare:
        for i, cell in enumerate(plan):
            case = _case(cell, routine.kind, routine.profile, i)
            bare.time(case, max(1, reps // 10))  # warm up: QEMU translates code on first use
            seconds = bare.time(case, reps)
            row: dict[str, object] = {"routine": routine.name, "group": cell.group, "n": cell.n,
                                      "src_off": cell.src_off, "dst_off": cell.dst_off,
                                      "disp": cell.disp, "weight": cell.weight,
                                      "mib_s": round(cell.n * reps / seconds / 2**20, 1) if seconds else None}
            c = counts[i]
            if c is not None:
                row.update(c)
                row["insn_per_byte"] = round(c["insns"] / cell.n, 4) if cell.n else None
            rows.append(row)
    return rows


def _ratio(a: object, b: object) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
        return b / a
    return None


def summary(rows_a: list[dict[str, object]], rows_b: list[dict[str, object]], name_a: str, name_b: str) -> str:
    """One line: how many times fewer instructions name_a needs than name_b at 8 KiB."""
    def at(rows: list[dict[str, object]], group: str, off: int) -> object:
        for r in rows:
            key = "src_off" if group == "from" else "dst_off"
            if r["group"] == group and r["n"] == 8192 and r[key] == off:
                return r.get("insn_per_byte")
        return None
    group = "from" if any(r["group"] == "from" for r in rows_a) else "to"
    aligned = _ratio(at(rows_a, group, 0), at(rows_b, group, 0))
    ratios = [_ratio(at(rows_a, group, o), at(rows_b, group, o)) for o in range(1, 8)]
    worst = [w for w in ratios if w is not None]
    if aligned is None or not worst:
        return f"{name_a} vs {name_b}: no instruction counts (natively there is no plugin)"
    return (f"{name_a} vs {name_b}: {aligned:.1f}x fewer instructions aligned, "
            f"{min(worst):.1f}x unaligned (worst offset), 8 KiB")


def mix_score(rows: list[dict[str, object]]) -> dict[str, float | None]:
    mix = [r for r in rows if r["group"] == "mix"]
    total_w = sum(int(r["weight"]) for r in mix) or 1  # type: ignore[call-overload]
    insns = [r.get("insns") for r in mix]
    per_call = (sum(int(r["weight"]) * int(i) for r, i in zip(mix, insns, strict=True)) / total_w  # type: ignore[call-overload]
                if mix and all(isinstance(i, int) for i in insns) else None)
    return {"weighted_insns_per_call": round(per_call, 1) if per_call is not None else None}


def run_bench(root: Path, args: argparse.Namespace) -> int:
    opts = TargetCommandOptions.from_args(args)
    if args.plot:  # before the bench, not after it
        check_plot_path(Path(args.plot))
    target = opts.target
    if opts.file:
        routines = file_routines(root, opts.file, target, "linux")[:1]
    else:
        if not opts.routine:
            raise CopyfuzzError("name a routine (copyfuzz list), or a file: FILE.S --symbol S")
        routines = bundled_routines(root, [opts.routine], target.xlen, isa=target.isa)[:1]
    if args.vs:
        routines += bundled_routines(root, [args.vs], target.xlen, isa=target.isa)[:1]
    kinds = {r.kind for r in routines}
    if len(kinds) > 1:
        raise CopyfuzzError(f"--vs compares routines of one kind, not {' and '.join(sorted(kinds))}")
    build.build_routines(root, routines)
    emulated = not all(build.routine_native(r) for r in routines)
    if emulated:
        build.build_host(root, ["plugin"])
    build.check_runners(routines)
    sizes = tuple(args.sizes) if args.sizes else BIG_SIZES
    plan = cells(routines[0].kind, sizes, not args.no_small, not args.no_mix)
    results = {r.name: measure(root, r, plan, args.reps) for r in routines}

    names = [r.name for r in routines]
    line = summary(results[names[0]], results[names[1]], names[0], names[1]) if len(names) == 2 else None
    report = {"emulated": emulated, "reps": args.reps, "sizes": list(sizes),
              "routines": {n: {"rows": rows, "mix": mix_score(rows)} for n, rows in results.items()},
              "summary": line}
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.csv:
        buf = io.StringIO()
        fields = ["routine", "group", "n", "src_off", "dst_off", "disp", "weight", "insns", "insn_per_byte", "loads",
                  "stores", "bytes_loaded", "bytes_stored", "misaligned", "taken", "vinsns", "vmem_insns",
                  "velems", "vbytes_loaded", "vbytes_stored", "mib_s"]
        w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for rows in results.values():
            w.writerows(rows)
        sys.stdout.write(buf.getvalue())
    else:
        print_tables(results, sizes, emulated, line)
    if args.plot:  # after the results are out: a failed write loses none of them
        sys.stdout.flush()
        plot(results, Path(args.plot), emulated)
    return 0


def _fmt(v: object, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def print_tables(results: dict[str, list[dict[str, object]]], sizes: tuple[int, ...], emulated: bool,
                 line: str | None) -> None:
    console = stdout_console()
    names = list(results)
    speed = "emulated MiB/s" if emulated else "MiB/s"
    for group, title in (("from", "copy_from_user (user source at offset)"),
                         ("to", "copy_to_user (user destination at offset)"),
                         ("small", "small sizes"), ("mix", "workload mix (weights from published memcpy data)")):
        rows_a = [r for r in results[names[0]] if r["group"] == group]
        if not rows_a:
            continue
        if any(r.get("disp") for r in rows_a) and group in MEMMOVE_TITLES:
            title = MEMMOVE_TITLES[group]
        table = new_table(title=f"{names[0]}: {title}" + (f"  vs {names[1]}" if len(names) > 1 else ""),
                      title_justify="left", show_edge=False, pad_edge=False)
        # A routine that ran vector instructions: how many, and the bytes each vector
        # load or store moved on average (vl x element width, from the plugin).
        vector = any(r.get("vinsns") for r in rows_a)
        cols_shown = ["case", "n", "insn/B", "loads", "stores", "misaligned", "taken"]
        cols_shown += ["vec insns", "B/vec access"] if vector else []
        for col in (*cols_shown, speed):
            table.add_column(col, justify="left" if col == "case" else "right")
        if len(names) > 1:
            table.add_column("vs insn/B", justify="right")
            table.add_column("ratio", justify="right")
        rows_b = [r for r in results[names[1]] if r["group"] == group] if len(names) > 1 else []
        for i, r in enumerate(rows_a):
            case = (f"src+{r['src_off']}" if group == "from" else f"dst+{r['dst_off']}" if group == "to"
                    else f"src+{r['src_off']} dst+{r['dst_off']}")
            if r.get("disp"):
                case += f" disp{r['disp']:+d}"
            cols = [case, _fmt(r["n"]), _fmt(r.get("insn_per_byte")), _fmt(r.get("loads")),
                    _fmt(r.get("stores")), _fmt(r.get("misaligned")), _fmt(r.get("taken"))]
            if vector:
                moved, accesses = r.get("vbytes_loaded", 0), r.get("vmem_insns")
                moved = (moved or 0) + (r.get("vbytes_stored") or 0)  # type: ignore[operator]
                cols += [_fmt(r.get("vinsns")), _fmt(moved / accesses, 1) if isinstance(accesses, int) and accesses
                         else "-"]
            cols.append(_fmt(r["mib_s"], 1))
            if rows_b:
                b = rows_b[i]
                ratio = _ratio(r.get("insn_per_byte"), b.get("insn_per_byte"))
                cols += [_fmt(b.get("insn_per_byte")), f"{ratio:.1f}x" if ratio else "-"]
            table.add_row(*cols)
        emit(console, table)
        emit(console)
    for name in names:
        score = mix_score(results[name])["weighted_insns_per_call"]
        if score is not None:
            emit(console, f"{name}: workload mix {score:,.1f} instructions per call (weighted)")
    if line:
        emit(console, f"[bold]{line}[/]")


def check_plot_path(path: Path) -> None:
    if path.suffix.lower() not in (".png", ".svg"):
        raise CopyfuzzError(f"--plot {path}: use a .png or .svg file name")
    files.check_file(path, "--plot")


def plot(results: dict[str, list[dict[str, object]]], path: Path, emulated: bool) -> None:
    """Instructions per byte against offset, one line per routine and size (PNG or SVG)."""
    check_plot_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [g for g in ("from", "to") if any(r["group"] == g for rows in results.values() for r in rows)]
    fig, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4), squeeze=False)
    for ax, group in zip(axes[0], groups, strict=True):
        key = "src_off" if group == "from" else "dst_off"
        for name, rows in results.items():
            for n in sorted({int(r["n"]) for r in rows if r["group"] == group}):  # type: ignore[call-overload]
                pts = [(r[key], r.get("insn_per_byte")) for r in rows if r["group"] == group and r["n"] == n]
                if any(y is None for _, y in pts):
                    continue
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=f"{name} {n // 1024} KiB")
        ax.set_title(f"copy_{group}_user: {'user source' if group == 'from' else 'user destination'} offset")
        ax.set_xlabel("offset (bytes)")
        ax.set_ylabel("instructions per byte (QEMU plugin)")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("copyfuzz bench: exact instruction counts from the QEMU plugin")
    fig.tight_layout()
    try:
        with files.writing(path, "--plot"):
            fig.savefig(path)
    finally:
        plt.close(fig)

