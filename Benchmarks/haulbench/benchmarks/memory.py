"""Benchmark 5: peak RSS by file size (256 MiB, and 4 GiB unless --quick or the disk is short)."""

import os
import shutil

from .. import GiB, MiB, stats
from ..measure import alternate
from . import common

KEY = "5"
TITLE = "5. Memory: peak RSS by file size"
CHART = None
NEEDS = []
SMALL, LARGE = 256 * MiB, 4 * GiB


def measure(ctx):
    sizes, notes = [SMALL], []
    free = shutil.disk_usage(ctx.base).free
    if ctx.quick:
        notes.append("4 GiB skipped (--quick).")
    elif free < 9 * GiB + 2 * GiB:
        notes.append(f"4 GiB skipped: {free / GiB:.1f} GiB free on the benchmark disk, 11 GiB needed.")
    else:
        sizes.append(LARGE)
    rows = []
    for size in sizes:
        name = f"{size // MiB}m.bin"
        src = ctx.file(name, size, source=ctx.file("1g.bin", GiB) if size > GiB else None)
        url = ctx.nginx.url(name)
        # A file larger than 1 GiB is compared by size only (cmp of 4 GiB takes a while).
        source = src if size <= GiB else None
        tools = [common.haul(ctx, "haul", url, [], size, source),
                 common.haul(ctx, "haul -x 16", url, ["-x", "16"], size, source)]
        reps = ctx.reps if size <= GiB else max(1, min(ctx.reps, 2))
        for row in alternate(tools, ctx.dl, ctx.base, reps, 0):
            row["size"] = size
            rows.append(row)
        if size > GiB:
            os.unlink(src)
    stats.summarize(rows, None, None)
    return {"sizes": sizes, "rows": rows, "notes": notes, "metrics": {}}


def render(b):
    num = common.num
    md = [f"### {TITLE}", "",
          "| tool | file | wall median (s) | MiB/s | peak RSS median (MiB) | peak RSS max (MiB) | CPU s |",
          "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in b["rows"]:
        s = r["summary"]
        md.append(f"| `{r['tool']}` | {r['size'] // MiB} MiB | {num(s['wall'], '.2f')} | {num(s['mibps'], '.0f')} | "
                  f"{num(s['rss'], '.1f')} | {num(s['rss_max'], '.1f')} | {num(s['cpu'], '.2f')} |")
    return "\n".join(md + ["", *b["notes"], ""])
