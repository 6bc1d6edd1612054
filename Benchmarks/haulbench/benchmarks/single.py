"""Benchmark 1: one 1 GiB file over one loopback connection, beside the two limits of the
machine measured in the same rounds: the network's (`curl -o /dev/null`) and the disk's
(`dd oflag=direct` of the same size into the download directory), each alone and both at once
(receiving and writing share the machine: its memory, its cores, the virtual disk's path), and
the disk's limit for bytes made durable (`dd oflag=direct conv=fdatasync`: the same writes and one
flush of the disk's cache at the end, as Haul's file is flushed before it is reported). Also the
same GiB with no options (`haul`: connections chosen automatically), what a user gets who types
none; no target reads it."""

import os

from .. import GiB, MiB, stats
from ..measure import Tool, alternate
from . import common
from .common import num

KEY = "1"
TITLE = "1. One 1 GiB file over one connection (loopback)"
CHART = "1 GiB, 1 connection"
NEEDS = ["wget", "aria2c", "sha256sum", "dd", "openssl"]
REFERENCE = "haul -x 1"
NETWORK = "curl -o /dev/null"
DISK = "dd oflag=direct"
HASH = "openssl dgst -sha256"
AT_ONCE = "curl -o /dev/null & dd oflag=direct"
DURABLE = "dd oflag=direct conv=fdatasync"
AUTOMATIC = "haul"


def tools(ctx, url, size, src):
    two_step = 'curl -sS -o "$1" "$2" && sha256sum "$1" >/dev/null'
    return [
        common.haul(ctx, REFERENCE, url, ["-x", "1"], size, src),
        common.curl("curl", url, size, src),
        Tool("wget", lambda dl: ["wget", "-q", "-O", common.output_path(dl), url], common.OUT, size, src),
        common.aria2c("aria2c -x1", url, ["-x1", "-s1"], size, src),
        # The cost of Haul's default SHA-256, against the same work done the usual way.
        common.haul(ctx, "haul -x 1 --no-sha256", url, ["-x", "1", "--no-sha256"], size, src),
        # No options: automatic mode may add connections, and then hashes bytes out of order by
        # reading them back.
        common.haul(ctx, AUTOMATIC, url, [], size, src),
        Tool("curl, then sha256sum", lambda dl: ["sh", "-c", two_step, "sh", common.output_path(dl), url],
             common.OUT, size, src),
        # The limits: the same bytes with nothing written, and the same size written with nothing received.
        Tool(NETWORK, lambda dl: ["curl", "-sS", "-o", "/dev/null", url]),
        Tool(DISK, lambda dl: dd(dl, size), "x", size),
        Tool(DURABLE, lambda dl: dd(dl, size) + ["conv=fdatasync"], "x", size),
        # Both at once, as a download does them: done when both are (either failing fails it).
        Tool(AT_ONCE, lambda dl: ["sh", "-c", 'curl -sS -o /dev/null "$1" & c=$!; shift; "$@" || exit 1; wait $c',
                                  "sh", url, *dd(dl, size)], "x", size),
        # With the default SHA-256, a third limit: the hash alone, from the page cache (OpenSSL, as Haul's).
        Tool(HASH, lambda dl: ["openssl", "dgst", "-sha256", "-out", "/dev/null", src]),
    ]


def dd(dl, size):
    return ["dd", "if=/dev/zero", f"of={os.path.join(dl, 'x')}", "bs=1M", f"count={size // MiB}", "oflag=direct",
            "status=none"]


def measure(ctx):
    size = GiB
    src = ctx.file("1g.bin", size)
    rows = alternate(tools(ctx, ctx.nginx.url("1g.bin"), size, src), ctx.dl, ctx.base, ctx.reps, ctx.warmup)
    stats.summarize(rows, size, REFERENCE)
    return {"size": size, "reference": REFERENCE, "rows": rows, "metrics": derive(rows)}


def derive(rows):
    """SHA-256's cost (haul with and without it) and the limits, from the rows' medians."""
    def field(tool, name):
        r = stats.row(rows, tool)
        return r["summary"][name] if r and not r["summary"]["failures"] else None

    def diff(a, b):
        return None if a is None or b is None else a - b

    haul_wall = field(REFERENCE, "wall")
    metrics = {
        "sha256_cpu_cost": common.metric(diff(field(REFERENCE, "cpu"), field("haul -x 1 --no-sha256", "cpu")), "CPU-s"),
        "sha256_wall_cost": common.metric(diff(haul_wall, field("haul -x 1 --no-sha256", "wall")), "s"),
    }
    automatic = field(AUTOMATIC, "wall")
    if automatic is not None:
        metrics["automatic_over_one"] = common.metric(stats.ratio(automatic, haul_wall), "×")
    network, disk = field(NETWORK, "wall"), field(DISK, "wall")
    if network is not None or disk is not None:
        limit = max(v for v in (network, disk) if v is not None)
        metrics["network_limit"] = common.metric(network, "s", label=f"`{NETWORK}`")
        metrics["disk_limit"] = common.metric(disk, "s", label=f"`{DISK}`")
        metrics["haul_over_limit"] = common.metric(stats.ratio(haul_wall, limit), "×")
        at_once = field(AT_ONCE, "wall")
        if at_once is not None:
            metrics["limits_at_once"] = common.metric(at_once, "s", label=f"`{AT_ONCE}`")
            metrics["haul_over_limits_at_once"] = common.metric(stats.ratio(haul_wall, at_once), "×")
        durable = field(DURABLE, "wall")
        if durable is not None:
            metrics["durable_disk_limit"] = common.metric(durable, "s", label=f"`{DURABLE}`")
            metrics["haul_over_durable_disk_limit"] = common.metric(stats.ratio(haul_wall, durable), "×")
        sha = field(HASH, "wall")
        if sha is not None:
            metrics["sha256_limit"] = common.metric(sha, "s", label=f"`{HASH}`")
            metrics["haul_over_limits_with_sha256"] = common.metric(stats.ratio(haul_wall, max(limit, sha)), "×")
    return metrics


def render(b):
    rows, m = b["rows"], b["metrics"]
    two_step = stats.row(rows, "curl, then sha256sum")["summary"]
    md = [f"### {TITLE}", "", common.tool_table(rows, b["reference"]), "",
          f"Haul computes the file's SHA-256 by default (reported in `--json`, verified against any "
          f"checksum or server digest), on a thread of its own while the bytes arrive. Measured cost here: "
          f"{num(m['sha256_cpu_cost']['value'], '+.2f')} CPU-s and {num(m['sha256_wall_cost']['value'], '+.2f')} s "
          f"wall per GiB (`haul -x 1` vs `haul -x 1 --no-sha256`); curl followed by `sha256sum` takes "
          f"{num(two_step['wall'], '.2f')} s and {num(two_step['cpu'], '.2f')} CPU-s.", ""]
    automatic = stats.row(rows, AUTOMATIC)
    if automatic and "automatic_over_one" in m:
        md[-2] += (f" With no options (`{AUTOMATIC}`: the connections chosen automatically) the same GiB took "
                   f"{num(automatic['summary']['wall'], '.2f')} s, {num(m['automatic_over_one']['value'], '.2f')}× "
                   f"`{REFERENCE}`: it tries more connections and closes them again where they bring nothing; "
                   f"the bytes they wrote ahead of the hashed prefix are read back to be hashed.")
    if "disk_limit" in m:
        net, disk, over = (m[k]["value"] for k in ("network_limit", "disk_limit", "haul_over_limit"))
        md += [f"The machine's limits, measured in the same rounds: the network's (`{NETWORK}`, nothing written) "
               f"{num(net, '.2f')} s, the disk's (`{DISK}`: {b['size'] // MiB} MiB of zeros written past the page "
               f"cache into the download directory, nothing received) {num(disk, '.2f')} s. Haul's wall time is "
               f"{num(over, '.2f')}× the larger of the two."]
        if "sha256_limit" in m:
            sha, over_sha = m["sha256_limit"]["value"], m["haul_over_limits_with_sha256"]["value"]
            md[-1] += (f" With the default SHA-256 there is a third: the hash alone (`{HASH}` of the same GiB, "
                       f"from the page cache) takes {num(sha, '.2f')} s, and Haul's wall time is "
                       f"{num(over_sha, '.2f')}× the largest of the three. On two CPUs that also run the server, "
                       f"hashing, receiving and writing share the cores, so Haul's own limit with the hash is "
                       f"above all three.")
        if "limits_at_once" in m:
            both, over_both = m["limits_at_once"]["value"], m["haul_over_limits_at_once"]["value"]
            slowed = stats.ratio(both, max(v for v in (net, disk) if v is not None))
            why = ("receiving and writing share the machine's memory, cores and virtual disk"
                   if slowed is not None and slowed > 1.1 else "here they hardly slowed each other")
            md[-1] += (f" Run at once (`{AT_ONCE}`, done when both are), as a download must do them, the two take "
                       f"{num(both, '.2f')} s ({num(slowed, '.2f')}× the larger alone: {why}), and Haul's wall "
                       f"time is {num(over_both, '.2f')}× that.")
        if "durable_disk_limit" in m:
            durable, over_durable = m["durable_disk_limit"]["value"], m["haul_over_durable_disk_limit"]["value"]
            md[-1] += (f" The disk's limit does not include making the bytes durable: `dd` returns once the disk "
                       f"has them in its cache. Flushed once at the end (`{DURABLE}`), as Haul flushes its file "
                       f"(and its checkpoints) before it reports it, the same writes take {num(durable, '.2f')} s "
                       f"({num(stats.ratio(durable, disk), '.2f')}× without the flush), and Haul's wall time is "
                       f"{num(over_durable, '.2f')}× that.")
        md.append("")
    return "\n".join(md)
