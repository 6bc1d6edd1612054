"""The run file: machine facts, versions, settings, every sample, medians, target verdicts.

Written to <out>/runs/<UTC timestamp>.json (e.g. runs/20261201T143000Z.json); `--compare` and
`--update-readme` read it back. Schema "haul-bench-run/1"; see Benchmarks/README.md.
"""

import datetime
import json
import os
import platform
import shutil
import subprocess

from . import GiB
from .fixture import nginx_binary

SCHEMA = "haul-bench-run/1"


class RunFileError(ValueError):
    pass


def machine(download_dir):
    """Facts about the machine that explain numbers: CPUs, kernel, memory, the download disk."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    facts = {"cpus": os.cpu_count(), "cpu_model": cpu, "kernel": platform.release()}
    try:
        with open("/proc/meminfo") as f:
            kib = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        facts["memory_gib"] = round(kib / 1024 / 1024, 1)
    except (OSError, StopIteration, ValueError):
        pass
    facts["load_average"] = [round(x, 2) for x in os.getloadavg()]
    fs = subprocess.run(["df", "--output=fstype", download_dir], capture_output=True, text=True).stdout.split()
    facts["download_fs"] = fs[-1] if fs else "?"
    facts["download_free_gib"] = round(shutil.disk_usage(download_dir).free / GiB, 1)
    facts["python"] = platform.python_version()
    return facts


def versions(haul):
    """The first line of each tool's version output (for haul also the libcurl it loads)."""
    def lines(cmd, stream="stdout"):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return ["?"]
        return (getattr(p, stream).strip().splitlines() or ["?"])
    haul_lines = lines([haul, "--version"])
    libcurl = haul_lines[1].split()[0] if len(haul_lines) > 1 and haul_lines[1].startswith("libcurl/") else None
    found = {
        "haul": haul_lines[0] + (f" ({libcurl})" if libcurl else ""),
        "curl": lines(["curl", "--version"])[0].split(" (")[0],
        "wget": lines(["wget", "--version"])[0].split(" built")[0],
        "aria2c": lines(["aria2c", "--version"])[0],
        "axel": lines(["axel", "--version"])[0].split(" (")[0],
        "nginx": lines([nginx_binary(), "-v"], "stderr")[0].replace("nginx version: ", ""),
        "dd": lines(["dd", "--version"])[0],
    }
    return found


def timestamp(when):
    """The run file's name for a UTC datetime: 20261201T143000Z."""
    return when.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def write(run, out_dir):
    """Writes the run file; returns its path. Sets run["raw_results"] to the path from the
    repository root when out_dir is inside it (the README quotes it)."""
    runs = os.path.join(out_dir, "runs")
    os.makedirs(runs, exist_ok=True)
    path = os.path.join(runs, run["id"] + ".json")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    rel = os.path.relpath(os.path.abspath(path), root)
    run["raw_results"] = rel if not rel.startswith("..") else os.path.abspath(path)
    with open(path, "w") as f:
        json.dump(run, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return path


def load(path):
    try:
        with open(path) as f:
            run = json.load(f)
    except OSError as e:
        raise RunFileError(f"{path}: cannot read: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise RunFileError(f"{path}: not JSON: {e}") from e
    if not isinstance(run, dict) or run.get("schema") != SCHEMA:
        raise RunFileError(f"{path}: not a benchmark run file (expected \"schema\": \"{SCHEMA}\")")
    if not isinstance(run.get("benchmarks"), dict):
        raise RunFileError(f"{path}: has no \"benchmarks\" object")
    return run
