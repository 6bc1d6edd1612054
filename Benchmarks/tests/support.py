"""Small run files for the tests, built in code so each test shows what it depends on."""

import copy
import json
import os

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def fixture_run():
    with open(os.path.join(FIXTURES, "run-20261129T215000Z.json")) as f:
        return json.load(f)


def fixture_section():
    with open(os.path.join(FIXTURES, "section-20261129T215000Z.md")) as f:
        return f.read()


def sample(wall, cpu=1.0, rss_mib=20.0, rc=0, ok=True):
    return {"wall": wall, "user": cpu * 0.75, "sys": cpu * 0.25, "rss_kib": int(rss_mib * 1024), "rc": rc, "ok": ok}


def summary(wall, cpu=1.0, rss=20.0, failures=0, n=3, **extra):
    s = {"n": n, "failures": failures, "wall": wall, "wall_min": wall, "wall_max": wall, "mibps": None,
         "rss": rss, "rss_max": rss, "cpu": cpu, "ratio": None, "cpu_ratio": None}
    s.update(extra)
    return s


def bench(rows, **extra):
    """A benchmark's results: rows {tool: summary} (or (tool, size) keys), plus extra keys."""
    out = []
    for key, s in rows.items():
        tool, size = key if isinstance(key, tuple) else (key, None)
        row = {"tool": tool, "samples": [], "summary": copy.deepcopy(s)}
        if size is not None:
            row["size"] = size
        out.append(row)
    return {"rows": out, "metrics": {}, **extra}


def run(benchmarks, targets=None, **extra):
    r = {"schema": "haul-bench-run/1", "id": "20261201T000000Z", "date": "2026-12-01 00:00", "minutes": 1.0,
         "machine": {"cpus": 2, "cpu_model": "Test CPU", "kernel": "6.1"}, "versions": {"haul": "haul 0.1.0"},
         "settings": {"reps": 3, "warmup": 1, "resume_reps": 1, "quick": False, "only": list(benchmarks)},
         "benchmarks": benchmarks, "targets": targets or []}
    r.update(extra)
    return r
