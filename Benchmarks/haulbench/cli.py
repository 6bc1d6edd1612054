"""Command line of Benchmarks/run: a run, --install, --compare, --update-readme, --profile."""

import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from . import compare, render, results, targets, tools
from .benchmarks import ALL
from .context import Context
from .fixture import Nginx
from .measure import log

BENCH_DIR = tools.BENCH_DIR
ROOT = os.path.dirname(BENCH_DIR)
DEFAULT_OUT = os.path.join(BENCH_DIR, "results")
DEFAULT_TARGETS = os.path.join(BENCH_DIR, "targets.json")
AFTER_RUN = "after-run"

EPILOG = """\
examples:
  Benchmarks/run --install           install the tools and matplotlib, then stop
  Benchmarks/run                     full run (all benchmarks, 5 runs each after 1 warm-up)
  Benchmarks/run --quick             short run (2 runs, no warm-up, 1 resume trial, no 4 GiB file)
  Benchmarks/run --only 1,2 -n 3     benchmarks 1 and 2, 3 counted runs each
  Benchmarks/run --update-readme     full run, then its results into README.md
  Benchmarks/run --update-readme Benchmarks/results/runs/20261129T215000Z.json
                                     README.md and latest.md from that run file (no run)
  Benchmarks/run --compare OLD.json NEW.json
                                     what changed between two runs (file or run id)
  Benchmarks/run --profile           profile `haul -x 1` on 64 MiB instead

benchmarks:
""" + "\n".join(f"  {k}  {m.TITLE.split('. ', 1)[1]}" for k, m in ALL.items()) + """

Every run writes <out>/runs/<UTC time>.json (machine, versions, every sample, medians,
target verdicts), <out>/latest.md and <out>/throughput.png. Targets: Benchmarks/targets.json.
"""


def parse(argv):
    p = argparse.ArgumentParser(prog="Benchmarks/run", description="Haul's benchmark suite: Haul, curl, wget, "
                                "aria2c and axel on the same work, from a private nginx on 127.0.0.1, in alternation.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--install", action="store_true", help="install missing tools (apt-get) and matplotlib "
                   "(a virtual environment in Benchmarks/.venv), then stop; with --profile also valgrind")
    p.add_argument("--quick", action="store_true", help="short run: 2 repetitions, no warm-up, 1 resume trial, "
                   "no 4 GiB file")
    p.add_argument("--only", default=",".join(ALL), metavar="LIST", help="benchmarks to run, e.g. 1,2 (default: all)")
    p.add_argument("-n", "--reps", type=int, metavar="N", help="counted repetitions per tool (default 5; --quick 2)")
    p.add_argument("--warmup", type=int, metavar="N", help="uncounted rounds first (default 1; --quick 0)")
    p.add_argument("--resume-reps", type=int, metavar="N", help="trials per variant in benchmark 4 "
                   "(default 3; --quick 1)")
    p.add_argument("--update-readme", nargs="?", const=AFTER_RUN, metavar="RUN.json", help="put a run's results "
                   "between the README's markers and into latest.md: this run's, or RUN.json's without running")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="print what changed from run A to run B "
                   "(run files or ids under <out>/runs) and stop")
    p.add_argument("--profile", action="store_true", help="profile `haul -x 1` (64 MiB) instead of benchmarking")
    p.add_argument("--no-plot", action="store_true", help="no chart (matplotlib not needed)")
    p.add_argument("--haul", metavar="PATH", help="use this haul binary instead of `swift build -c release --static-swift-stdlib`")
    p.add_argument("--scratch-path", metavar="DIR", help="passed to swift build")
    p.add_argument("--workdir", metavar="DIR", help="where served files and downloads go (default: a new "
                   "directory under $TMPDIR, on its disk)")
    p.add_argument("--port", type=int, metavar="N", help="nginx on 127.0.0.1:N (plain) and N+1 (2 MiB/s) "
                   "instead of ephemeral ports")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help="where results go (default Benchmarks/results)")
    p.add_argument("--targets", default=DEFAULT_TARGETS, metavar="FILE", help="targets file "
                   "(default Benchmarks/targets.json)")
    args = p.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in ALL]
    if unknown or not only:
        p.error(f"--only: unknown benchmark {', '.join(unknown) or '(none given)'}; choose from {', '.join(ALL)}")
    args.only = [k for k in ALL if k in only]
    args.reps = args.reps if args.reps is not None else (2 if args.quick else 5)
    args.warmup = args.warmup if args.warmup is not None else (0 if args.quick else 1)
    args.resume_reps = args.resume_reps if args.resume_reps is not None else (1 if args.quick else 3)
    for name in ("reps", "resume_reps"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 0:
        p.error("--warmup must be 0 or more")
    if args.update_readme == AFTER_RUN and (args.quick or args.only != list(ALL) or args.profile):
        p.error("--update-readme after a --quick, --only or --profile run would replace the README's full results; "
                "to show such a run anyway, render its file: --update-readme RUN.json")
    if args.port is not None and not 1 <= args.port <= 65534:
        p.error("--port must be 1 to 65534")
    return args


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # so that nginx stops and the work directory goes


def resolve_run(name, out):
    """A run file given by path or by id under <out>/runs."""
    if os.path.exists(name):
        return name
    candidate = os.path.join(out, "runs", name if name.endswith(".json") else name + ".json")
    return candidate if os.path.exists(candidate) else name


def build_haul(args):
    if args.haul:
        return os.path.abspath(args.haul)
    if shutil.which("swift") is None:
        raise tools.MissingTools("swift is not installed: pass --haul PATH to benchmark a haul binary")
    # The binary the README's install section builds: with the Swift libraries linked in, only
    # the pages it uses are resident (measured: 31 MiB peak for 1 GiB, against 33.5 MiB when
    # the shared Swift libraries are mapped).
    cmd = ["swift", "build", "-c", "release", "--static-swift-stdlib", "--product", "haul"]
    if args.scratch_path:
        cmd += ["--scratch-path", args.scratch_path]
    log("building: " + " ".join(cmd))
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run(cmd + ["--show-bin-path"], cwd=ROOT, check=True, capture_output=True, text=True)
    return os.path.join(out.stdout.strip(), "haul")


def publish(run, out, update_readme):
    """latest.md (and the chart) in out; the README section when asked. Returns the markdown."""
    os.makedirs(out, exist_ok=True)
    markdown = render.body(run)
    with open(os.path.join(out, "latest.md"), "w") as f:
        f.write(render.latest(markdown))
    if update_readme:
        path = os.path.join(ROOT, "README.md")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(render.readme(text, markdown))
        log("README.md updated")
    return markdown


def draw(run, out):
    """The chart's file name in out, or None (a chart that fails loses no results)."""
    from . import plot
    try:
        return "throughput.png" if plot.chart(run, os.path.join(out, "throughput.png")) else None
    except Exception as e:  # matplotlib's errors are many; the run's numbers matter more
        log(f"no chart: {e}")
        return None


def needed_commands(args, installing=False):
    from . import profile
    if args.profile:
        return profile.NEEDS + ([] if tools.find("perf") and not installing else ["valgrind"])
    return [c for k in args.only for c in ALL[k].NEEDS]


def measure_all(args, target_list):
    haul = build_haul(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    began = time.monotonic()
    base = tempfile.mkdtemp(prefix="haul-bench-", dir=args.workdir)
    benchmarks = {}
    try:
        ctx = Context(haul, base, args.reps, args.warmup, args.resume_reps, args.quick)
        machine, versions = results.machine(ctx.dl), results.versions(haul)
        with Nginx(base, ctx.data, args.port) as nginx:
            ctx.nginx = nginx
            log(f"nginx on 127.0.0.1:{nginx.plain} (plain, /paced/, /novalidators/) and :{nginx.limited} "
                "(2 MiB/s per connection)")
            if args.profile:
                from . import profile
                profile.profile(ctx, args.out)
                return None
            for key in args.only:
                log(f"benchmark {key}: {ALL[key].TITLE}")
                try:
                    benchmarks[key] = ALL[key].measure(ctx)
                except Exception as e:  # a broken benchmark costs its own results, not the others'
                    log(traceback.format_exc())
                    benchmarks[key] = {"skipped": f"the benchmark failed ({type(e).__name__}: {e})."}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    run = {"schema": results.SCHEMA, "id": results.timestamp(started),
           "provenance": {"reconstructed": False, "made_by": "Benchmarks/run", "argv": sys.argv[1:]},
           "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "date": started.strftime("%Y-%m-%d %H:%M"),
           "minutes": round((time.monotonic() - began) / 60, 2), "machine": machine, "versions": versions,
           "settings": {"reps": args.reps, "warmup": args.warmup, "resume_reps": args.resume_reps,
                        "quick": args.quick, "only": args.only},
           "benchmarks": benchmarks}
    run["targets"] = targets.evaluate(target_list, run)
    return run


def main(argv):
    args = parse(argv)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    try:
        if args.compare:
            a, b = (results.load(resolve_run(n, args.out)) for n in args.compare)
            sys.stdout.write(compare.compare(a, b))
            return 0
        if args.update_readme and args.update_readme != AFTER_RUN:
            run = results.load(args.update_readme)
            if not args.no_plot and run.get("chart"):
                tools.check([], plot=True)
                from . import plot
                plot.chart(run, os.path.join(args.out, run["chart"]))
            print(publish(run, args.out, True))
            return 0
        if args.install:
            tools.install(needed_commands(args, installing=True))
            return 0
        target_list = targets.load(args.targets)
        plot = not args.no_plot and not args.profile
        tools.check(needed_commands(args), plot=plot)
        os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)  # a bad --out fails before the run
        run = measure_all(args, target_list)
        if run is None:
            return 0
        run["chart"] = draw(run, args.out) if plot else None
        path = results.write(run, args.out)
        print(publish(run, args.out, args.update_readme == AFTER_RUN))
        counts = {v: sum(1 for t in run["targets"] if t["verdict"] == v) for v in targets.VERDICTS}
        log(f"results in {path}; targets: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
        return 0
    except (tools.MissingTools, targets.TargetsError, results.RunFileError, render.ReadmeError) as e:
        print(f"Benchmarks/run: {e}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as e:
        print(f"Benchmarks/run: {' '.join(map(str, e.cmd))} failed (exit {e.returncode})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Benchmarks/run: interrupted; nothing written", file=sys.stderr)
        return 130

