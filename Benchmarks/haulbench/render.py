"""Markdown from a run file (pure): the README section between the markers and latest.md.

Rendering only formats: every number comes from the run file, so an old run renders the same
today as on the day it was measured.
"""

from .benchmarks import ALL

START, END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"
MARKS = {"met": "yes", "missed": "**no**", "not measured": "n/a"}


class ReadmeError(ValueError):
    pass


def machine_line(m):
    return f"{m['cpus']} CPUs ({m['cpu_model']}), Linux {m['kernel']}"


def header(run):
    s = run["settings"]
    return (f"Measured {run['date']} on {machine_line(run['machine'])}, a shared machine (other jobs may run at once): "
            f"tools run in alternation (A B A B …), {s['reps']} counted runs each after {s['warmup']} warm-up "
            f"round(s); medians quoted, ratios are tool / Haul (below 1 means faster than Haul). "
            f"nginx serves from page cache on 127.0.0.1; downloads go to the same disk and are deleted after each run. "
            f"Peak RSS and CPU seconds from `/usr/bin/time`. The whole run took {run['minutes']:.1f} minutes.")


def facts(run):
    """The optional facts line: what a run file has beyond the header (None when nothing)."""
    m, parts = run["machine"], []
    if "memory_gib" in m:
        parts.append(f"{m['memory_gib']:g} GiB of memory")
    if "load_average" in m:
        parts.append(f"load average {m['load_average'][0]:.2f} at the start")
    if "download_fs" in m:
        parts.append(f"downloads on {m['download_fs']} with {m.get('download_free_gib', 0):g} GiB free")
    if run.get("settings", {}).get("quick"):
        parts.append("a --quick run")
    text = ("Machine: " + ", ".join(parts) + ".") if parts else ""
    if run.get("raw_results"):
        text += (" " if text else "") + f"Every sample is in `{run['raw_results']}`."
    return text or None


def targets_table(verdicts):
    lines = ["### Targets", "", "| benchmark | target | met | measured |", "| --- | --- | --- | --- |"]
    for v in verdicts:
        lines.append(f"| {v['benchmark']} | {v['text']} | {MARKS[v['verdict']]} | {v['detail']} |")
    return lines + [""]


def section(key, b):
    module = ALL[key]
    if b.get("skipped"):
        return f"### {module.TITLE}\n\nSkipped: {b['skipped']}\n"
    return module.render(b)


def body(run):
    """The markdown of a run: header, versions, one section per benchmark, targets, chart."""
    lines = [header(run), "", f"Versions: {'; '.join(run['versions'].values())}.", ""]
    extra = facts(run)
    if extra:
        lines += [extra, ""]
    lines += [section(k, run["benchmarks"][k]) for k in ALL if k in run["benchmarks"]]
    if run.get("targets"):
        lines += targets_table(run["targets"])
    if run.get("chart"):
        lines += [f"![Throughput per tool](Benchmarks/results/{run['chart']})", ""]
    return "\n".join(lines)


def readme(text, markdown):
    """README text with the part between the markers replaced by markdown."""
    if START not in text or END not in text or text.index(START) > text.index(END):
        raise ReadmeError(f"README.md has no {START} … {END} markers to put the results between")
    return text[:text.index(START)] + f"{START}\n{markdown.strip()}\n{END}" + text[text.index(END) + len(END):]


def latest(markdown):
    """Benchmarks/results/latest.md: the same markdown, its links relative to results/."""
    return ("# Haul benchmarks (latest run)\n\nMade by `Benchmarks/run`.\n\n"
            + markdown.replace("](Benchmarks/results/", "](") + "\n")
