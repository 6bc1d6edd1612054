"""Benchmark 4: the resume cost. 1 GiB with `haul -x 1`, stopped at >= 95 % (SIGINT or SIGKILL),
then the same command again, unpaced; nginx's access log says what the rerun cost.

Four variants: each stop from a server with validators (ETag, Last-Modified) and from one
with none, where Haul must fetch again an overlap of what it holds and compare it before it
appends (issue 11 part 1). "fetched again" is what nginx sent to the rerun beyond the bytes
missing from the state it resumed from (the completed event's resumed_from): 0 when a strong
validator binds the held bytes, about the overlap without one."""

import os
import signal

from .. import GiB, MiB, stats
from ..measure import clean_dir, events_in, log, run_until, same_bytes, stop_process, timed
from . import common

KEY = "4"
TITLE = "4. Resume cost: 1 GiB with `haul -x 1`, stopped at ≥ 95 %, then the same command again"
CHART = None
NEEDS = []
PACE = "256m"  # so that a progress event at >= 95 % arrives before the end
STOP_AT = 0.95
CHECKPOINT_INTERVAL = 0.25  # DownloadOptions.checkpointInterval: durable progress lags by about this
OVERLAP = 64 * 1024  # issue 11: without validators, a resume re-fetches at least 64 KiB (all held bytes when fewer)
VARIANTS = [("SIGINT (clean)", "SIGINT", True), ("SIGKILL", "SIGKILL", True),
            ("SIGINT (clean), no validators", "SIGINT", False), ("SIGKILL, no validators", "SIGKILL", False)]


def trial(ctx, sig, validators):
    size = GiB
    src = ctx.file("1g.bin", size)
    clean_dir(ctx.dl)
    out = os.path.join(ctx.dl, "resume.bin")
    url = ctx.nginx.url("1g.bin", location="paced" if validators else "novalidators")
    cmd = [ctx.haul, "--json", "-x", "1", "-o", out, url]
    ctx.nginx.set_pace(PACE)
    seen = {"held": 0, "speed": 0.0}

    def reached(event):
        if event.get("event") != "progress":
            return False
        seen["held"], seen["speed"] = event["bytes"], event["bytes_per_second"]
        return seen["held"] >= STOP_AT * size

    first, _ = run_until(cmd, reached)
    stop_process(first, getattr(signal, sig))
    ctx.nginx.set_pace(None)
    offset = ctx.nginx.log_offset()
    jsonl = os.path.join(ctx.base, "rerun.jsonl")
    with open(jsonl, "w") as f:
        r = timed(cmd, ctx.dl, ctx.base, stdout=f)
    events = events_in(jsonl)
    done = next((e for e in events if e.get("event") == "completed"), {})
    sent, requests = ctx.nginx.bytes_since(offset)
    held, speed = seen["held"], seen["speed"]
    resumed_from = done.get("resumed_from")
    t = {"held": held, "speed": speed, "wall": r["wall"], "rss_mib": r["rss_kib"] / 1024, "rc": r["rc"],
         "received": done.get("received"), "resumed_from": resumed_from, "sent": sent, "requests": requests,
         "restarts": [e.get("reason") for e in events if e.get("event") == "restarted"],
         "missing": size - held, "window": speed * CHECKPOINT_INTERVAL,
         "overlap_allowed": 0 if validators else min(OVERLAP, held),
         "fetched_again": None if resumed_from is None else sent - (size - resumed_from),
         "exact": r["rc"] == 0 and same_bytes(out, src)}
    t["allowed"] = t["missing"] + t["window"] + t["overlap_allowed"]
    clean_dir(ctx.dl)
    return t


def summarize_variant(trials):
    """Medians (MiB, s) of a variant's trials, the worst trial and whether every rerun was exact."""
    def mib(key):
        return stats.median([None if t[key] is None else t[key] / MiB for t in trials])
    worst = max(trials, key=lambda t: t["sent"] - t["allowed"])
    return {"median": {"held_mib": mib("held"), "speed_mibps": mib("speed"),
                       "wall": stats.median([t["wall"] for t in trials]),
                       "received_mib": mib("received"), "sent_mib": mib("sent"), "missing_mib": mib("missing"),
                       "allowed_mib": mib("allowed"), "rss_mib": stats.median([t["rss_mib"] for t in trials]),
                       "fetched_again_mib": mib("fetched_again")},
            "worst": worst, "exact": all(t["exact"] for t in trials)}


def measure(ctx):
    variants = []
    for label, sig, validators in VARIANTS:
        trials = []
        for _ in range(ctx.resume_reps):
            t = trial(ctx, sig, validators)
            log(f"  resume {label}: held {t['held'] / MiB:.0f} MiB, rerun {t['wall']:.2f} s, nginx sent "
                f"{t['sent'] / MiB:.1f} MiB, fetched again {common.num(t['fetched_again'], ',d')} bytes, "
                f"exact {t['exact']}")
            trials.append(t)
        variants.append({"label": label, "signal": sig, "validators": validators, "trials": trials,
                         **summarize_variant(trials)})
    return {"size": GiB, "trials_per_variant": ctx.resume_reps, "variants": variants, "metrics": derive(variants)}


def derive(variants):
    metrics = {}
    for v in variants:
        w, label = v["worst"], v["label"]
        extra = f" + overlap {w['overlap_allowed'] / MiB:.2f}" if w["overlap_allowed"] else ""
        metrics[f"{label}: fetched"] = common.metric(
            w["sent"] / MiB, "MiB", f"worst of {len(v['trials'])}: missing {w['missing'] / MiB:.1f} + window "
            f"{w['window'] / MiB:.1f}{extra} MiB", f"fetched after {label}")
        metrics[f"{label}: allowed"] = common.metric(w["allowed"] / MiB, "MiB", label="allowed")
    again = [t["fetched_again"] for v in variants if v["validators"] for t in v["trials"]]
    if again:
        worst = None if None in again else max(again) / MiB
        metrics["fetched again with validators"] = common.metric(
            worst, "MiB", "a rerun did not complete" if worst is None else None, "held bytes fetched again")
    metrics["exact"] = common.metric(all(v["exact"] for v in variants), "bool",
                                     f"{sum(len(v['trials']) for v in variants)} reruns", "every rerun's file (cmp)")
    return metrics


def render(b):
    num = common.num
    overlap = any("fetched_again_mib" in v["median"] for v in b["variants"])
    allowed = "allowed: missing + one 0.25 s window" + (" (+ 64 KiB overlap without validators)" if overlap else "")
    columns = ["stop", "held at stop (MiB)", "first run speed (MiB/s)", "rerun wall (s)", "rerun `received` (MiB)",
               "nginx sent to rerun (MiB)", "missing at stop (MiB)", f"{allowed} (MiB)"]
    columns += ["held bytes fetched again (MiB)"] if overlap else []
    columns += ["rerun peak RSS (MiB)", "exact (cmp)"]
    md = [f"### {TITLE}", "",
          "The first run is paced by nginx (`limit_rate`) so that a progress event at ≥ 95 % arrives in time; "
          "the rerun is not paced.", "",
          "| " + " | ".join(columns) + " |",
          "| " + " | ".join(["---"] + ["---:"] * (len(columns) - 2) + ["---"]) + " |"]
    for v in b["variants"]:
        m = v["median"]
        cells = [v["label"], num(m["held_mib"], ".0f"), num(m["speed_mibps"], ".0f"), num(m["wall"], ".2f"),
                 num(m["received_mib"], ".1f"), num(m["sent_mib"], ".1f"), num(m["missing_mib"], ".1f"),
                 num(m["allowed_mib"], ".1f")]
        cells += [num(m.get("fetched_again_mib"), ".2f")] if overlap else []
        cells += [num(m["rss_mib"], ".1f"), "yes" if v["exact"] else "**no**"]
        md.append("| " + " | ".join(cells) + " |")
    md += ["", f"Medians of {b['trials_per_variant']} trials each. \"held\" is the last progress event's byte count "
           "before the signal; the window is the first run's speed × 0.25 s (the checkpoint interval)."]
    if overlap:
        md[-1] += (" \"no validators\": nginx sends neither ETag nor Last-Modified, so Haul must fetch again part of "
                   "what it holds and compare it before appending; \"fetched again\" is what nginx sent beyond the "
                   "bytes missing from the state the rerun resumed from (0 with validators).")
    md.append("")
    return "\n".join(md)
