"""Command lines and table rendering the benchmarks share."""

import os

from ..measure import Tool

OUT = "out.bin"


def output_path(dl):
    return os.path.join(dl, OUT)


def haul(ctx, name, url, args, size, source):
    """`haul -q ARGS -o DL/out.bin URL`."""
    return Tool(name, lambda dl: [ctx.haul, "-q", *args, "-o", output_path(dl), url], OUT, size, source)


def curl(name, url, size, source):
    return Tool(name, lambda dl: ["curl", "-sS", "-o", output_path(dl), url], OUT, size, source)


def aria2c(name, url, args, size, source):
    return Tool(name, lambda dl: ["aria2c", "-q", "--console-log-level=error", "--summary-interval=0",
                                  "--allow-overwrite=true", "--auto-file-renaming=false", *args, "-d", dl, "-o", OUT,
                                  url], OUT, size, source)


def metric(value, unit, note=None, label=None):
    """A derived value in the run file (targets can name it)."""
    m = {"value": value, "unit": unit}
    if note:
        m["note"] = note
    if label:
        m["label"] = label
    return m


def num(value, spec):
    """A number formatted by spec, or n/a."""
    return "n/a" if value is None else format(value, spec)


def tool_table(rows, reference):
    """The per-tool table: medians, range, ratios to the reference row, throughput, RSS, CPU."""
    out = ["| tool | wall median (s) | min–max (s) | wall / Haul | MiB/s | peak RSS (MiB) | CPU s (user+sys) "
           "| CPU / Haul |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        s = r["summary"]
        name = f"**{r['tool']}**" if r["tool"] == reference else f"`{r['tool']}`"
        fail = f" ({s['failures']} failed)" if s.get("failures") else ""
        out.append(f"| {name}{fail} | {num(s['wall'], '.2f')} | "
                   f"{num(s['wall_min'], '.2f')}–{num(s['wall_max'], '.2f')} | "
                   f"{num(s['ratio'], '.2f')} | {num(s['mibps'], '.0f')} | {num(s['rss'], '.1f')} | "
                   f"{num(s['cpu'], '.2f')} | {num(s['cpu_ratio'], '.2f')} |")
    return "\n".join(out)
