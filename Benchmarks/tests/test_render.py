import unittest

from haulbench import MiB, render
from haulbench.benchmarks import resume, single

from .support import bench, fixture_run, fixture_section, run, summary


class FixtureRunTests(unittest.TestCase):
    """The run file describing the full run of 2026-11-29 renders the README section of that day."""

    def test_the_section_is_reproduced_byte_for_byte(self):
        self.assertEqual(render.body(fixture_run()).strip(), fixture_section().strip())

    def test_readme_replaces_only_between_the_markers(self):
        text = f"# Haul\n\nintro\n\n{render.START}\nold table\n{render.END}\n\n## Next\n"
        new = render.readme(text, "new table\n")
        self.assertEqual(new, f"# Haul\n\nintro\n\n{render.START}\nnew table\n{render.END}\n\n## Next\n")

    def test_a_readme_without_markers_is_refused(self):
        with self.assertRaises(render.ReadmeError):
            render.readme("# Haul\n", "table")

    def test_latest_links_relative_to_results(self):
        md = render.latest("x\n![Throughput per tool](Benchmarks/results/throughput.png)\n")
        self.assertTrue(md.startswith("# Haul benchmarks (latest run)\n"))
        self.assertIn("](throughput.png)", md)
        self.assertNotIn("Benchmarks/results/", md)


class NewDataTests(unittest.TestCase):
    """What runs made by this package add: limits, the no-validator variants, facts, verdicts."""

    def test_benchmark_1_states_the_limits(self):
        b = bench({"haul -x 1": summary(2.3, ratio=1.0), "curl, then sha256sum": summary(5.0),
                   "curl -o /dev/null": summary(0.5), "dd oflag=direct": summary(2.0)},
                  size=1024 * MiB, reference="haul -x 1")
        b["metrics"] = single.derive(b["rows"])
        self.assertAlmostEqual(b["metrics"]["haul_over_limit"]["value"], 1.15)
        md = single.render(b)
        self.assertIn("the network's (`curl -o /dev/null`, nothing written) 0.50 s", md)
        self.assertIn("Haul's wall time is 1.15× the larger of the two.", md)
        self.assertIn("Measured cost here: n/a CPU-s", md)  # no --no-sha256 row in this run

    def test_benchmark_1_states_what_no_options_cost(self):
        b = bench({"haul -x 1": summary(1.0, ratio=1.0), "curl, then sha256sum": summary(5.0),
                   "haul": summary(1.8)}, size=1024 * MiB, reference="haul -x 1")
        b["metrics"] = single.derive(b["rows"])
        self.assertAlmostEqual(b["metrics"]["automatic_over_one"]["value"], 1.8)
        md = single.render(b)
        self.assertIn("With no options (`haul`: the connections chosen automatically) the same GiB took 1.80 s, "
                      "1.80× `haul -x 1`", md)
        del b["rows"][-1]
        b["metrics"] = single.derive(b["rows"])
        self.assertNotIn("With no options", single.render(b), "a run without the row says nothing of it")

    def test_benchmark_1_states_the_limits_at_once(self):
        b = bench({"haul -x 1": summary(1.2, ratio=1.0), "curl, then sha256sum": summary(5.0),
                   "curl -o /dev/null": summary(0.4), "dd oflag=direct": summary(0.6),
                   "curl -o /dev/null & dd oflag=direct": summary(1.5)},
                  size=1024 * MiB, reference="haul -x 1")
        b["metrics"] = single.derive(b["rows"])
        self.assertAlmostEqual(b["metrics"]["haul_over_limit"]["value"], 2.0)
        self.assertAlmostEqual(b["metrics"]["haul_over_limits_at_once"]["value"], 0.8)
        md = single.render(b)
        self.assertIn("the two take 1.50 s (2.50× the larger alone: receiving and writing share", md)
        self.assertIn("and Haul's wall time is 0.80× that.", md)

    def test_benchmark_1_states_the_durable_disk_limit(self):
        b = bench({"haul -x 1": summary(3.0, ratio=1.0), "curl, then sha256sum": summary(5.0),
                   "curl -o /dev/null": summary(0.4), "dd oflag=direct": summary(1.2),
                   "dd oflag=direct conv=fdatasync": summary(2.4)},
                  size=1024 * MiB, reference="haul -x 1")
        b["metrics"] = single.derive(b["rows"])
        self.assertAlmostEqual(b["metrics"]["haul_over_durable_disk_limit"]["value"], 1.25)
        self.assertAlmostEqual(b["metrics"]["haul_over_limit"]["value"], 2.5, msg="the target's limit is unchanged")
        md = single.render(b)
        self.assertIn("the same writes take 2.40 s (2.00× without the flush), and Haul's wall time is 1.25× that.", md)

    def test_benchmark_1_without_the_limits_at_once_says_nothing_of_them(self):
        b = bench({"haul -x 1": summary(1.2, ratio=1.0), "curl, then sha256sum": summary(5.0),
                   "curl -o /dev/null": summary(0.4), "dd oflag=direct": summary(0.6)},
                  size=1024 * MiB, reference="haul -x 1")
        b["metrics"] = single.derive(b["rows"])
        self.assertNotIn("haul_over_limits_at_once", b["metrics"])
        self.assertNotIn("at once", single.render(b))
        self.assertNotIn("durable", single.render(b))

    def test_benchmark_4_shows_what_was_fetched_again(self):
        trial = {"held": 1000 * MiB, "speed": 200 * MiB, "wall": 1.0, "rss_mib": 25.0, "rc": 0,
                 "received": 24 * MiB + 65536, "resumed_from": 1000 * MiB - 65536, "sent": 24 * MiB + 65536,
                 "requests": 1, "restarts": [], "missing": 24 * MiB, "window": 50 * MiB, "overlap_allowed": 65536,
                 "fetched_again": 65536, "exact": True, "allowed": 74 * MiB + 65536}
        variant = {"label": "SIGINT (clean), no validators", "signal": "SIGINT", "validators": False,
                   "trials": [trial], **resume.summarize_variant([trial])}
        b = {"size": 1024 * MiB, "trials_per_variant": 1, "variants": [variant], "metrics": resume.derive([variant])}
        md = resume.render(b)
        self.assertIn("| held bytes fetched again (MiB) |", md)
        self.assertIn("| SIGINT (clean), no validators | 1000 | 200 | 1.00 | 24.1 | 24.1 | 24.0 | 74.1 | 0.06 |", md)
        fetched = b["metrics"]["SIGINT (clean), no validators: fetched"]
        self.assertEqual(fetched["note"], "worst of 1: missing 24.0 + window 50.0 + overlap 0.06 MiB")

    def test_facts_raw_results_and_verdict_marks(self):
        verdicts = [{"id": "a", "benchmark": "3", "text": "fast", "verdict": "met", "detail": "d1"},
                    {"id": "b", "benchmark": "3", "text": "faster", "verdict": "missed", "detail": "d2"},
                    {"id": "c", "benchmark": "3", "text": "fastest", "verdict": "not measured", "detail": "d3"}]
        r = run({"3": bench({"haul -j 16": summary(1.0, ratio=1.0, cpu_ratio=1.0, mibps=97.7)},
                            reference="haul -j 16")}, verdicts, raw_results="Benchmarks/results/runs/x.json")
        r["machine"].update(memory_gib=23.5, load_average=[0.5, 0.4, 0.3], download_fs="ext4", download_free_gib=80)
        md = render.body(r)
        self.assertIn("Machine: 23.5 GiB of memory, load average 0.50 at the start, downloads on ext4 with 80 GiB "
                      "free. Every sample is in `Benchmarks/results/runs/x.json`.", md)
        self.assertIn("| **haul -j 16** | 1.00 | 1.00–1.00 | 1.00 | 98 | 20.0 | 1.00 | 1.00 |", md)
        self.assertIn("| 3 | fast | yes | d1 |\n| 3 | faster | **no** | d2 |\n| 3 | fastest | n/a | d3 |", md)
        self.assertNotIn("![Throughput", md)

    def test_a_skipped_benchmark_says_why(self):
        md = render.body(run({"3": {"skipped": "haul takes one URL"}}))
        self.assertIn("### 3. 1,000 files of 100 KiB, 16 at a time\n\nSkipped: haul takes one URL\n", md)


if __name__ == "__main__":
    unittest.main()
