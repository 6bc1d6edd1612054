"""Running tools and measuring them: /usr/bin/time, alternation A B A B with warm-up.

Wall time comes from our monotonic clock around the whole process, peak RSS (KiB) and user
and system CPU seconds from GNU time (`-f "%e %M %U %S"`). Every tool runs in its own
process group, so a timeout or Ctrl-C ends the tool and everything it started.
"""

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time

TIME = "/usr/bin/time"
TIME_FORMAT = "%e %M %U %S"


def log(message):
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def timed(argv, cwd, scratch, timeout=600, stdout=subprocess.DEVNULL):
    """Runs argv under /usr/bin/time; returns a sample {wall, rss_kib, user, sys, rc} (rc -9 on
    timeout). `scratch` is a directory for time's output file, outside what the tool writes."""
    tfile = os.path.join(scratch, ".time")
    start = time.monotonic()
    p = subprocess.Popen([TIME, "-o", tfile, "-f", TIME_FORMAT] + argv, cwd=cwd, stdout=stdout,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        _kill_group(p)
        err, rc = f"timed out after {timeout} s".encode(), -9
    except BaseException:
        _kill_group(p)
        raise
    wall = time.monotonic() - start
    fields = []
    if os.path.exists(tfile):
        with open(tfile) as f:
            lines = f.read().strip().splitlines()
        os.unlink(tfile)
        fields = lines[-1].split() if lines else []
    if len(fields) != 4:
        fields = ["0", "0", "0", "0"]
    _, rss, user, sys_ = fields
    sample = {"wall": round(wall, 4), "rss_kib": int(rss), "user": float(user), "sys": float(sys_), "rc": rc}
    if rc != 0:
        sample["stderr"] = err.decode(errors="replace")[-300:]
        log(f"exit {rc}: {' '.join(argv)}: {sample['stderr']}")
    return sample


def clean_dir(path):
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)


def same_bytes(a, b):
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


class Tool:
    """One command line in a benchmark.

    argv(dl) builds the command for download directory dl. The result is checked by `verify(dl)`
    (returns a problem or None) or, simpler, by `output` (a file name in dl that must have `size`
    bytes) and `source` (the file it must equal; compared with cmp once per tool, as a file
    of 1 GiB takes a while to compare)."""

    def __init__(self, name, argv, output=None, size=None, source=None, verify=None):
        self.name, self.argv, self.output, self.size, self.source = name, argv, output, size, source
        self.verify = verify
        self.compared = False

    def problem(self, dl):
        if self.verify:
            return self.verify(dl)
        if self.output is None:
            return None
        out = os.path.join(dl, self.output)
        if not os.path.exists(out):
            return f"no {self.output}"
        if os.path.getsize(out) != self.size:
            return f"{self.output} has {os.path.getsize(out)} bytes, not {self.size}"
        if self.source and not self.compared:
            self.compared = True
            if not same_bytes(out, self.source):
                return f"{self.output} differs from the served file"
        return None


def alternate(tools, dl, scratch, reps, warmup, timeout=600):
    """Runs each tool `warmup + reps` times in rounds A B C A B C ... into an emptied dl;
    returns rows [{"tool", "argv", "samples"}] with the counted samples, each marked ok."""
    rows = [{"tool": t.name, "argv": t.argv(dl), "samples": []} for t in tools]
    for round_ in range(warmup + reps):
        for tool, row in zip(tools, rows):
            clean_dir(dl)
            sample = timed(tool.argv(dl), dl, scratch, timeout=timeout)
            problem = tool.problem(dl) if sample["rc"] == 0 else f"exit {sample['rc']}"
            sample["ok"] = problem is None
            if problem:
                sample["problem"] = problem
                log(f"{tool.name}: wrong result: {problem}")
            label = "warm-up" if round_ < warmup else f"run {round_ - warmup + 1}/{reps}"
            log(f"  {tool.name:28s} {label:9s} {sample['wall']:7.2f} s  {sample['rss_kib'] / 1024:7.1f} MiB  "
                f"cpu {sample['user'] + sample['sys']:6.2f} s")
            if round_ >= warmup:
                row["samples"].append(sample)
    clean_dir(dl)
    return rows


def run_until(argv, stop, timeout=300):
    """Starts argv (a `haul --json` command), reads its events until stop(event) is true or it
    exits or `timeout` passes; returns (process, last event seen). The caller ends the process."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    last, buffer = None, b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(p.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.startswith(b"{"):
                    continue
                event = json.loads(line)
                last = event
                if stop(event):
                    return p, last
    return p, last


def stop_process(p, sig, timeout=30):
    """Sends sig to the process and waits for it (SIGKILL to the group after `timeout`)."""
    p.send_signal(sig)
    try:
        p.communicate(timeout=timeout)  # drains stdout, so a stopping haul never blocks on it
    except subprocess.TimeoutExpired:
        _kill_group(p)
        p.communicate()


def events_in(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]
