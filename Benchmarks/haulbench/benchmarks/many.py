"""Benchmark 3: 1,000 files of 100 KiB, 16 at a time (per-file costs: requests, durability)."""

import os
import shutil

from .. import stats
from ..measure import Tool, alternate, same_bytes
from . import common

KEY = "3"
TITLE = "3. 1,000 files of 100 KiB, 16 at a time"
CHART = "1,000 × 100 KiB, 16 at a time"
NEEDS = ["aria2c", "sync"]
REFERENCE = "haul -j 16"
DURABLE = "curl -Z --parallel-max 16, then sync -f"
MANAGER = "haul add, then haul run -j 16"
COUNT, SIZE = 1000, 100 * 1024


def names():
    return [f"f{i:04d}.bin" for i in range(COUNT)]


def verifier(seed):
    """Every file is there with its size; the first one equals the served bytes."""
    def problem(dl):
        files = [n for n in os.listdir(dl) if n.endswith(".bin")]
        if len(files) != COUNT:
            return f"{len(files)} files, not {COUNT}"
        wrong = [n for n in files if os.path.getsize(os.path.join(dl, n)) != SIZE]
        if wrong:
            return f"{len(wrong)} files of the wrong size, e.g. {wrong[0]}"
        if not same_bytes(os.path.join(dl, "f0000.bin"), seed):
            return "f0000.bin differs from the served file"
        return None
    return problem


def measure(ctx):
    sub = os.path.join(ctx.data, "many")
    os.makedirs(sub, exist_ok=True)
    seed = ctx.file("100k.bin", SIZE)
    for n in names():
        if not os.path.exists(os.path.join(sub, n)):
            shutil.copyfile(seed, os.path.join(sub, n))
    urls = [ctx.nginx.url(f"many/{n}") for n in names()]
    listing = os.path.join(ctx.base, "urls.txt")
    with open(listing, "w") as f:
        f.write("\n".join(urls) + "\n")
    check = verifier(seed)
    tools = [
        Tool(REFERENCE, lambda dl: [ctx.haul, "-q", "-j", "16", "-d", dl, "-i", listing], verify=check),
        # The same files through the download manager: queued in a catalog, then run from it (each
        # download's claim and end recorded there as well).
        Tool(MANAGER, lambda dl: ["sh", "-c", 'h="$1"; c="$2/catalog.sqlite"; '
                                  '"$h" add --catalog "$c" -d "$2" -i "$3" >/dev/null && '
                                  '"$h" run -q --catalog "$c" -j 16', "sh", ctx.haul, dl, listing], verify=check),
        Tool("aria2c -j16", lambda dl: ["aria2c", "-q", "-j16", "-x1", "--allow-overwrite=true", "-d", dl,
                                        "-i", listing], verify=check),
        Tool("curl -Z --parallel-max 16", lambda dl: ["curl", "-sS", "-Z", "--parallel-max", "16", "--output-dir", dl,
                                                      "--remote-name-all", *urls], verify=check),
        # The same durability as Haul's (which syncs each file before it gets its name, then the
        # directory), done the cheap way afterwards: one sync of the whole file system.
        Tool(DURABLE, lambda dl: ["sh", "-c", 'd="$1"; shift; curl -sS -Z --parallel-max 16 --output-dir "$d" '
                                  '--remote-name-all "$@" && sync -f "$d"', "sh", dl, *urls], verify=check),
    ]
    rows = alternate(tools, ctx.dl, ctx.base, ctx.reps, ctx.warmup)
    # The run file need not list all the URLs: the arguments before them, then a count.
    before_urls = {"curl -Z --parallel-max 16": 8, DURABLE: 5}
    for r in rows:
        if r["tool"] in before_urls:
            r["argv"] = r["argv"][:before_urls[r["tool"]]] + [f"... {COUNT} URLs"]
    stats.summarize(rows, COUNT * SIZE, REFERENCE)
    return {"count": COUNT, "file_size": SIZE, "size": COUNT * SIZE, "reference": REFERENCE, "rows": rows,
            "metrics": {}}


def render(b):
    table = f"### {TITLE}\n\n" + common.tool_table(b["rows"], b["reference"]) + "\n"
    if not stats.row(b["rows"], DURABLE):
        return table  # a run from before this row was measured
    manager = stats.row(b["rows"], MANAGER)
    if manager:
        table += (f"\n`{MANAGER}` is the download manager on the same files: `haul add` queues the 1,000 URLs in a "
                  f"catalog (SQLite), and `haul run` runs them 16 at a time, recording each one's claim and end "
                  f"there as well (the ends of downloads that finish together share one synced commit). It took "
                  f"{common.num(manager['summary']['ratio'], '.2f')}× `{REFERENCE}`.\n")
    return (table + "\n"
            f"Haul makes each file durable (data synced) before it gets its name, and the name durable "
            f"(directory synced) before it reports the file; curl and aria2c leave both to the kernel. "
            f"`{DURABLE}` adds one sync of the whole file system at the end, the cheapest way to the same "
            f"durability once everything is done. The downloads go to one directory that is emptied after "
            f"each run, as a user's would be; on ext4 without a journal (as here) each file created then "
            f"costs a scan of the inodes deleted in the last seconds (`recently_deleted`), which weighs on "
            f"whichever tool runs next.\n")
