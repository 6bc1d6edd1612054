"""Medians, ranges and ratios of samples (pure: no I/O).

A sample is one counted run of one tool: {"wall": s, "user": s, "sys": s, "rss_kib": KiB,
"rc": exit status, "ok": result verified}. A row is one tool in one benchmark:
{"tool": name, "samples": [...]} (benchmark 5 adds "size"). `summarize` adds "summary".
"""

import statistics

from . import MiB


def median(values):
    """The median, or None for no values (JSON has no NaN)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(value, reference):
    """value / reference, or None when either is missing or the reference is not positive."""
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference


def cpu(sample):
    return sample["user"] + sample["sys"]


def failed(sample):
    return sample["rc"] != 0 or not sample.get("ok", True)


def summarize_samples(samples, size):
    """Medians and ranges of one row's counted samples; `size` in bytes gives MiB/s."""
    walls = [s["wall"] for s in samples]
    wall = median(walls)
    rss = [s["rss_kib"] / 1024 for s in samples]
    return {
        "n": len(samples),
        "failures": sum(1 for s in samples if failed(s)),
        "wall": wall,
        "wall_min": min(walls) if walls else None,
        "wall_max": max(walls) if walls else None,
        "mibps": size / MiB / wall if wall and size else None,
        "rss": median(rss),
        "rss_max": max(rss) if rss else None,
        "cpu": median([cpu(s) for s in samples]),
    }


def summarize(rows, size, reference):
    """Adds a summary to every row, with wall and CPU ratios to the row named `reference`."""
    for row in rows:
        row["summary"] = summarize_samples(row["samples"], row.get("size", size))
    ref = next((r["summary"] for r in rows if r["tool"] == reference), None)
    for row in rows:
        s = row["summary"]
        s["ratio"] = ratio(s["wall"], ref["wall"]) if ref else None
        s["cpu_ratio"] = ratio(s["cpu"], ref["cpu"]) if ref else None
    return rows


def row(rows, tool, **match):
    """The row of `tool` (and e.g. size=...), or None."""
    for r in rows:
        if r["tool"] == tool and all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def percent_change(old, new):
    """(new - old) / old in percent, or None."""
    r = ratio(new, old)
    return None if r is None else (r - 1) * 100
