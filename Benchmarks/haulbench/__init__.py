"""Haul's benchmark suite as a package; `Benchmarks/run` is its entry point.

Pure parts (no tools, no I/O beyond reading JSON): `stats`, `targets`, `compare`, `render`.
The rest drives tools: `tools` (finding and installing them), `fixture` (the private nginx),
`measure` (running a tool under /usr/bin/time, alternation), `benchmarks/` (one module per
benchmark), `results` (machine facts, versions, the run file), `plot`, `profile`, `cli`.
"""

MiB = 1024 * 1024
GiB = 1024 * MiB
