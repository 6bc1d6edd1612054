"""Targets (Benchmarks/targets.json) and their evaluation against one run (pure).

A target names its benchmark, the measured quantity, a comparison and a limit:
  "quantity": {"tool": "haul -x 1", "field": "wall"}    a row's summary field (benchmark 5
                                                        rows also match on "size"), or
              {"metric": "kill_trial.exact"}            a value the benchmark derived;
  "comparison": "ratio"  value <= limit x combine(peers) + slack, peers being quantities
                         of the same run ("combine": "max" or "min" when there are several);
                "bound"  value <= limit;
                "true"   value is true.
A verdict is "met", "missed" or "not measured" (a benchmark, row or metric absent, or a peer
that failed); a subject that failed in any run misses its target.
"""

import json

from . import MiB

FIELD_UNITS = {"wall": "s", "wall_min": "s", "wall_max": "s", "cpu": "CPU-s", "rss": "MiB",
               "rss_max": "MiB", "mibps": "MiB/s"}
COMPARISONS = ("ratio", "bound", "true")
VERDICTS = ("met", "missed", "not measured")


class TargetsError(ValueError):
    """targets.json is malformed; the message lists every problem."""


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise TargetsError(f"{path}: cannot read: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise TargetsError(f"{path}: not JSON: {e}") from e
    targets = data.get("targets") if isinstance(data, dict) else None
    if not isinstance(targets, list):
        raise TargetsError(f"{path}: expected an object with a \"targets\" list")
    problems = validate(targets)
    if problems:
        raise TargetsError(f"{path}:\n  " + "\n  ".join(problems))
    return targets


def _check_quantity(where, q):
    if not isinstance(q, dict):
        return [f"{where}: expected an object"]
    if "metric" in q:
        return [] if isinstance(q["metric"], str) else [f"{where}: \"metric\" must be a string"]
    if not isinstance(q.get("tool"), str):
        return [f"{where}: needs \"tool\" (a row) or \"metric\""]
    if q.get("field") not in FIELD_UNITS:
        return [f"{where}: \"field\" must be one of {', '.join(FIELD_UNITS)}"]
    return []


def validate(targets):
    """Every problem in a list of targets, as messages naming the target."""
    problems, seen = [], set()
    for i, t in enumerate(targets):
        name = t.get("id", f"#{i + 1}") if isinstance(t, dict) else f"#{i + 1}"
        if not isinstance(t, dict):
            problems.append(f"{name}: expected an object")
            continue
        for key in ("id", "benchmark", "text"):
            if not isinstance(t.get(key), str) or not t.get(key):
                problems.append(f"{name}: needs \"{key}\" (a string)")
        if t.get("id") in seen:
            problems.append(f"{name}: duplicate id")
        seen.add(t.get("id"))
        problems += _check_quantity(f"{name}: quantity", t.get("quantity"))
        comparison = t.get("comparison")
        if comparison not in COMPARISONS:
            problems.append(f"{name}: \"comparison\" must be one of {', '.join(COMPARISONS)}")
            continue
        if comparison in ("ratio", "bound") and not isinstance(t.get("limit"), (int, float)):
            problems.append(f"{name}: needs a numeric \"limit\"")
        if comparison == "ratio":
            peers = t.get("peers")
            if not isinstance(peers, list) or not peers:
                problems.append(f"{name}: a ratio needs \"peers\" (a non-empty list)")
                continue
            for j, p in enumerate(peers):
                problems += _check_quantity(f"{name}: peer {j + 1}", p)
            if len(peers) > 1 and t.get("combine") not in ("max", "min"):
                problems.append(f"{name}: several peers need \"combine\": \"max\" or \"min\"")
            if not isinstance(t.get("slack", 0), (int, float)):
                problems.append(f"{name}: \"slack\" must be a number")
    return problems


class _Unmeasured(Exception):
    def __init__(self, reason, subject_failed=False):
        super().__init__(reason)
        self.reason = reason
        self.subject_failed = subject_failed


def fmt(value, unit):
    """A measured value with its unit, at the precision the tables use."""
    if unit == "bool":
        return "yes" if value else "no"
    if unit in ("s", "CPU-s"):
        return f"{value:.2f} {unit}"
    if unit == "MiB":
        return f"{value:.1f} MiB"
    if unit == "MiB/s":
        return f"{value:.0f} MiB/s"
    return f"{value:g} {unit}".rstrip()


def _lookup(bench, q, is_subject):
    """(value, unit, label, note) of a quantity in one benchmark's results."""
    if "metric" in q:
        m = bench.get("metrics", {}).get(q["metric"])
        if m is None:
            raise _Unmeasured(f"no metric {q['metric']!r} in this run")
        if m.get("value") is None:
            raise _Unmeasured(m.get("note") or f"{q['metric']} not measured")
        return m["value"], m.get("unit", ""), m.get("label", q["metric"]), m.get("note")
    match = {k: v for k, v in q.items() if k not in ("tool", "field")}
    row = next((r for r in bench.get("rows", []) if r["tool"] == q["tool"]
                and all(r.get(k) == v for k, v in match.items())), None)
    label = q["tool"] + (f" ({q['size'] // MiB} MiB)" if "size" in q else "")
    if row is None:
        notes = " ".join(bench.get("notes", []))
        raise _Unmeasured(f"no row for `{label}` in this run" + (f": {notes}" if notes else ""))
    s = row.get("summary", {})
    if s.get("failures"):
        raise _Unmeasured(f"`{label}` failed in {s['failures']} of {s['n']} runs", subject_failed=is_subject)
    value = s.get(q["field"])
    if value is None:
        raise _Unmeasured(f"`{label}`: no {q['field']} measured")
    return value, FIELD_UNITS[q["field"]], f"`{label}`", None


def evaluate_one(target, bench):
    """The verdict of one target against one benchmark's results (a dict, see module doc)."""
    verdict = {"id": target["id"], "benchmark": target["benchmark"], "text": target["text"],
               "limit": target.get("limit")}
    try:
        if bench.get("skipped"):
            raise _Unmeasured(bench["skipped"])
        value, unit, label, note = _lookup(bench, target["quantity"], True)
        comparison = target["comparison"]
        if comparison == "true":
            met = value is True
            detail = f"{label}: {fmt(bool(value), 'bool')}"
        elif comparison == "bound":
            met = value <= target["limit"]
            detail = f"{label} {fmt(value, unit)} (limit {fmt(target['limit'], unit)})"
        else:
            peers = [_lookup(bench, p, False) for p in target["peers"]]
            combine = max if target.get("combine", "max") == "max" else min
            reference = combine(p[0] for p in peers)
            slack = target.get("slack", 0)
            met = value <= target["limit"] * reference + slack
            described = ", ".join(f"{p[2]} {fmt(p[0], p[1])}" for p in peers)
            if len(peers) > 1:
                described = f"{target.get('combine', 'max')}({described}) = {fmt(reference, unit)}"
            times = f"{value / reference:.2f}×" if reference > 0 else "n/a"
            extra = f" + {fmt(slack, unit)}" if slack else ""
            detail = (f"{label} {fmt(value, unit)} vs {described}: {times} "
                      f"(limit {target['limit']:.2f}×{extra})")
            verdict["reference"] = reference
        verdict.update(verdict="met" if met else "missed", value=value, detail=detail)
        if note:
            verdict["detail"] += f"; {note}"
    except _Unmeasured as e:
        verdict.update(verdict="missed" if e.subject_failed else "not measured", value=None,
                       detail=e.reason)
    return verdict


def evaluate(targets, run):
    """Verdicts of every target whose benchmark is in the run, in the targets' order."""
    benchmarks = run.get("benchmarks", {})
    return [evaluate_one(t, benchmarks[t["benchmark"]]) for t in targets if t["benchmark"] in benchmarks]
