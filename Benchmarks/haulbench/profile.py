"""--profile: where `haul -x 1` spends its time on 64 MiB (callgrind where valgrind copes with
swiftc's DWARF 5, else perf: cpu-clock samples, syscall counts, mallocs per received chunk).
Writes <out>/profile.txt."""

import os
import shutil
import subprocess

from . import MiB
from .measure import clean_dir, same_bytes

NEEDS = ["objcopy"]  # and valgrind or perf


def profile(ctx, out_dir):
    """The hot path of `haul -x 1`: callgrind where valgrind copes, else perf (cpu-clock samples),
    syscall counts (tracepoints) and heap allocations per received chunk (a uprobe on malloc)."""
    report = []
    size = 64 * MiB
    src = ctx.file("64m.bin", size)
    out = os.path.join(ctx.dl, "p.bin")
    # Valgrind 3.19 cannot read the DWARF 5 that swiftc emits; the symbol table is enough for names.
    binary = os.path.join(ctx.base, "haul-nodebug")
    subprocess.run(["objcopy", "--strip-debug", ctx.haul, binary], check=True)
    haul_args = [binary, "-q", "-x", "1", "-o", out, ctx.nginx.url("64m.bin")]

    def demangle(text):
        return subprocess.run(["swift", "demangle", "--simplified", "--compact"], input=text, capture_output=True,
                              text=True).stdout or text

    if shutil.which("valgrind"):
        clean_dir(ctx.dl)
        cg = os.path.join(ctx.base, "callgrind.out")
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}"] + haul_args,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode == 0 and same_bytes(out, src):
            ann = subprocess.run(["callgrind_annotate", "--inclusive=no", cg], capture_output=True, text=True).stdout
            report += ["## callgrind (instructions, self)", demangle("\n".join(ann.splitlines()[:60]))]
        else:
            crash = [l for l in p.stderr.splitlines() if "impossible" in l or "SIGSEGV" in l or "ensure_valid" in l]
            report += ["## callgrind", "valgrind failed on haul (exit %d): %s" % (p.returncode, "; ".join(crash[:3]))]

    if shutil.which("perf"):
        clean_dir(ctx.dl)
        counts = subprocess.run(["perf", "stat", "-x", ",", "-e", "task-clock,syscalls:sys_enter_pwrite64,"
                                 "syscalls:sys_enter_recvfrom,syscalls:sys_enter_futex,syscalls:sys_enter_fdatasync,"
                                 "syscalls:sys_enter_poll,syscalls:sys_enter_ppoll"] + haul_args,
                                capture_output=True, text=True)
        report += ["## syscalls and CPU (perf stat, 64 MiB)"]
        for line in counts.stderr.splitlines():
            f = line.split(",")
            if len(f) > 2 and f[0].strip():
                report.append(f"{f[2]:40s} {f[0]}")
        clean_dir(ctx.dl)
        data = os.path.join(ctx.base, "perf.data")
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-g", "-o", data] + haul_args,
                       capture_output=True)
        top = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,symbol", "-g", "none",
                              "--stdio"], capture_output=True, text=True).stdout
        rows = [l.rstrip() for l in top.splitlines() if "%" in l and not l.startswith("#")][:30]
        report += ["## cpu-clock samples, self (perf)", demangle("\n".join(rows))]
        calls = subprocess.run(["perf", "report", "-i", data, "--children", "--sort", "symbol", "-g", "none",
                                "--stdio"], capture_output=True, text=True).stdout
        keep = ("pwrite", "recvfrom", "fdatasync", "ext4_sync_file", "receiveBody", "curlWriteCallback",
                "ext4_buffered_write_iter", "tcp_recvmsg", "swift_allocObject", "malloc")
        rows = [l.rstrip() for l in calls.splitlines() if "%" in l and any(k in l for k in keep)][:20]
        report += ["## cpu-clock samples, inclusive (perf)", demangle("\n".join(rows))]
        # Heap allocations per received chunk: a uprobe on malloc, stacks through the write callback.
        libc = "/lib/x86_64-linux-gnu/libc.so.6"
        subprocess.run(["perf", "probe", "-q", "-x", libc, "malloc"], capture_output=True)
        clean_dir(ctx.dl)
        mdata = os.path.join(ctx.base, "malloc.data")
        r = subprocess.run(["perf", "record", "-q", "-e", "probe_libc:malloc", "-g", "-o", mdata] + haul_args,
                           capture_output=True, text=True)
        if r.returncode == 0:
            script = subprocess.run(["perf", "script", "-i", mdata, "-F", "ip,sym"], capture_output=True,
                                    text=True).stdout
            stacks = script.split("\n\n")
            total = len([s for s in stacks if s.strip()])
            in_callback = [s for s in stacks if "curlWriteCallback" in s]
            callers = {}
            for s in in_callback:
                frames = [l.split(None, 1)[1] for l in s.strip().splitlines() if len(l.split(None, 1)) == 2]
                caller = next((f for f in frames if "$s4Haul" in f and "ContiguousArrayBuffer" not in f), "?")
                callers[caller] = callers.get(caller, 0) + 1
            pw = next((l.split(",")[0] for l in counts.stderr.splitlines() if "pwrite64" in l), "?")
            report += ["## malloc calls (uprobe, 64 MiB)",
                       f"total {total}; inside the curl write callback {len(in_callback)}; pwrite calls {pw}"]
            for caller, n in sorted(callers.items(), key=lambda x: -x[1])[:8]:
                report.append(f"{n:8d}  {demangle(caller).strip()}")
        subprocess.run(["perf", "probe", "-q", "-d", "probe_libc:malloc"], capture_output=True)
    clean_dir(ctx.dl)
    text = "\n".join(report) + "\n"
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "profile.txt"), "w") as f:
        f.write(text)
    print(text)
