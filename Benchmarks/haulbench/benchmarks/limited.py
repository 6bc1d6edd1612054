"""Benchmark 2: 32 MiB from a server limited to 2 MiB/s per connection (many connections
win), and the crash trial: three SIGKILLs during `haul -x 16`, then a rerun."""

import os
import signal

from .. import MiB, stats
from ..measure import Tool, alternate, clean_dir, events_in, run_until, same_bytes, stop_process, timed
from . import common
from .common import num

KEY = "2"
TITLE = "2. 32 MiB from a server limited to 2 MiB/s per connection (physical limit 1.0 s)"
CHART = "32 MiB, 2 MiB/s per connection"
NEEDS = ["aria2c", "axel"]
REFERENCE = "haul -x 16"
KILL_SIZE = 64 * MiB
KILL_FRACTIONS = (0.25, 0.5, 0.75)


def measure(ctx):
    size = 32 * MiB
    src = ctx.file("32m.bin", size)
    url = ctx.nginx.url("32m.bin", limited=True)
    tools = [
        common.haul(ctx, "haul", url, [], size, src),
        common.haul(ctx, REFERENCE, url, ["-x", "16"], size, src),
        common.aria2c("aria2c -x16 -s16 -k1M", url, ["-x16", "-s16", "-k1M"], size, src),
        Tool("axel -n 16", lambda dl: ["axel", "-q", "-n", "16", "-o", common.output_path(dl), url], common.OUT,
             size, src),
        common.curl("curl", url, size, src),
    ]
    rows = alternate(tools, ctx.dl, ctx.base, ctx.reps, ctx.warmup)
    stats.summarize(rows, size, REFERENCE)
    trial = kill_trial(ctx)
    return {"size": size, "reference": REFERENCE, "rows": rows, "kill_trial": trial,
            "metrics": {"kill_trial.exact": common.metric(trial["exact"], "bool", kill_note(trial),
                                                          "rerun after three SIGKILLs")}}


def kill_trial(ctx):
    """Three SIGKILLs during a 16-connection download (64 MiB at 2 MiB/s per connection): at the
    first progress event past 25 %, 50 % and 75 %; then a rerun, compared with cmp."""
    size = KILL_SIZE
    src = ctx.file("64m.bin", size)
    clean_dir(ctx.dl)
    out = os.path.join(ctx.dl, "kill.bin")
    offset = ctx.nginx.log_offset()
    cmd = [ctx.haul, "--json", "-x", "16", "-o", out, ctx.nginx.url("64m.bin", limited=True)]
    killed_at = []
    for fraction in KILL_FRACTIONS:
        held = [0]

        def past(event, fraction=fraction, held=held):
            if event.get("event") != "progress":
                return False
            held[0] = event["bytes"]
            return held[0] >= fraction * size

        p, _ = run_until(cmd, past)
        stop_process(p, signal.SIGKILL)
        killed_at.append(held[0])
    jsonl = os.path.join(ctx.base, "kill-rerun.jsonl")
    with open(jsonl, "w") as f:
        rerun = timed(cmd, ctx.dl, ctx.base, stdout=f)
    completed = [e for e in events_in(jsonl) if e.get("event") == "completed"]
    sent, requests = ctx.nginx.bytes_since(offset, settle=1.0)
    exact = rerun["rc"] == 0 and os.path.exists(out) and same_bytes(out, src)
    leftovers = sorted(n for n in os.listdir(ctx.dl) if n.endswith((".part", ".haul")))
    clean_dir(ctx.dl)
    return {"size": size, "killed_at": killed_at, "rerun": rerun,
            "rerun_received": completed[0]["received"] if completed else None,
            "sent": sent, "requests": requests, "exact": exact, "leftovers": leftovers}


def kill_note(t):
    killed = ", ".join(f"{k / MiB:.1f}" for k in t["killed_at"])
    note = (f"killed at {killed} MiB; rerun exit {t['rerun']['rc']}, {'identical' if t['exact'] else 'DIFFERENT'}; "
            f"server sent {t['sent'] / MiB:.1f} MiB over {t['requests']} requests for a {t['size'] // MiB} MiB file "
            f"({(t['sent'] / t['size'] - 1) * 100:+.1f} %)")
    return note + (f"; leftover {t['leftovers']}" if t["leftovers"] else "")


def render(b):
    t = b["kill_trial"]
    held = ", ".join(f"{k / MiB:.1f}" for k in t["killed_at"])
    received = None if t["rerun_received"] is None else t["rerun_received"] / MiB
    fractions = ", ".join(f"{f * 100:.0f} %" for f in KILL_FRACTIONS)
    kill = (f"Kill trial: {t['size'] // MiB} MiB from the 2 MiB/s server with `haul -x 16 --json`, SIGKILL at the "
            f"first progress event past {fractions} (held {held} MiB), then a rerun: exit {t['rerun']['rc']} in "
            f"{t['rerun']['wall']:.2f} s, rerun received {num(received, '.1f')} MiB, "
            f"`cmp` {'identical' if t['exact'] else '**DIFFERENT**'}; nginx sent {t['sent'] / MiB:.1f} MiB in "
            f"{t['requests']} requests in all.")
    return "\n".join([f"### {TITLE}", "", common.tool_table(b["rows"], b["reference"]), "", kill, ""])
