"""`--compare A B`: what changed between two run files, per benchmark and tool (pure)."""

from .benchmarks import ALL
from .stats import percent_change

FIELDS = (("wall", "wall s", ".2f"), ("cpu", "CPU s", ".2f"), ("rss", "RSS MiB", ".1f"))
RESUME_FIELDS = (("wall", "rerun s", ".2f"), ("sent_mib", "sent MiB", ".1f"), ("fetched_again_mib", "again MiB", ".2f"))


def _num(value, spec):
    return "—" if value is None else format(value, spec)


def _delta(old, new):
    p = percent_change(old, new)
    return "" if p is None else f"{p:+.1f} %"


def _describe(run, name):
    s = run.get("settings", {})
    made = " (reconstructed)" if run.get("provenance", {}).get("reconstructed") else ""
    return (f"{name}: {run.get('id', '?')}{made}, {run.get('date', '?')}, {s.get('reps', '?')} runs after "
            f"{s.get('warmup', '?')} warm-up{', --quick' if s.get('quick') else ''}")


def _row_key(row):
    return row["tool"] + (f" ({row['size'] // (1024 * 1024)} MiB)" if "size" in row else "")


def _table(named_a, named_b, fields, width):
    """Lines for items present in A or B: name, then for each field A, B and the change."""
    head = f"  {'':{width}s}" + "".join(f" {label + ' A':>10s} {label + ' B':>10s} {'Δ':>8s}"
                                       for _, label, _ in fields)
    lines = [head]
    for name in list(named_a) + [n for n in named_b if n not in named_a]:
        a, b = named_a.get(name), named_b.get(name)
        if a is None or b is None:
            lines.append(f"  {name:{width}s} only in {'B' if a is None else 'A'}")
            continue
        cells = "".join(f" {_num(a.get(k), spec):>10s} {_num(b.get(k), spec):>10s} {_delta(a.get(k), b.get(k)):>8s}"
                        for k, _, spec in fields)
        lines.append(f"  {name:{width}s}{cells}")
    return lines


def _metrics(a, b):
    lines = []
    for name in list(a) + [n for n in b if n not in a]:
        va, vb = a.get(name, {}).get("value"), b.get(name, {}).get("value")
        unit = a.get(name, b.get(name, {})).get("unit", "")
        if isinstance(va, bool) or isinstance(vb, bool):
            if va != vb:
                lines.append(f"  {name}: {va} → {vb}")
            continue
        change = _delta(va, vb)
        lines.append(f"  {name}: {_num(va, '.2f')} → {_num(vb, '.2f')} {unit}" + (f" ({change})" if change else ""))
    return lines


def benchmark(key, a, b):
    title = ALL[key].TITLE if key in ALL else f"benchmark {key}"
    lines = [title]
    if a is None or b is None:
        return lines + [f"  only in {'B' if a is None else 'A'}"]
    if "rows" in a or "rows" in b:
        rows_a = {_row_key(r): r["summary"] for r in a.get("rows", [])}
        rows_b = {_row_key(r): r["summary"] for r in b.get("rows", [])}
        lines += _table(rows_a, rows_b, FIELDS, max(len(n) for n in list(rows_a) + list(rows_b) + ["tool"]))
    if "variants" in a or "variants" in b:
        va = {v["label"]: v["median"] for v in a.get("variants", [])}
        vb = {v["label"]: v["median"] for v in b.get("variants", [])}
        lines += _table(va, vb, RESUME_FIELDS, max(len(n) for n in list(va) + list(vb) + ["stop"]))
    lines += _metrics(a.get("metrics", {}), b.get("metrics", {}))
    return lines


def targets(a, b):
    va = {v["id"]: v for v in a.get("targets", [])}
    vb = {v["id"]: v for v in b.get("targets", [])}
    lines = ["Targets (A → B)"]
    for i in list(va) + [i for i in vb if i not in va]:
        old = va[i]["verdict"] if i in va else "absent"
        new = vb[i]["verdict"] if i in vb else "absent"
        mark = "  " if old == new else "* "
        lines.append(f"{mark}{i}: {old} → {new}" + (f" ({vb[i]['detail']})" if i in vb and old != new else ""))
    return lines


def compare(a, b):
    """The differences between run files a and b as text; Δ is B's change against A."""
    lines = [_describe(a, "A"), _describe(b, "B"),
             "Medians; Δ is B against A (negative: less time, CPU or memory).", ""]
    keys = [k for k in ALL if k in a["benchmarks"] or k in b["benchmarks"]]
    for key in keys:
        lines += benchmark(key, a["benchmarks"].get(key), b["benchmarks"].get(key)) + [""]
    return "\n".join(lines + targets(a, b)) + "\n"
