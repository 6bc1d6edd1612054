import json
import os
import tempfile
import unittest

from haulbench import MiB, targets
from haulbench.benchmarks import ALL

from .support import bench, run, summary

TARGETS_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "targets.json")


def ratio(peers, limit, quantity=None, **extra):
    t = {"id": "t", "benchmark": "1", "text": "a target", "quantity": quantity or {"tool": "haul", "field": "wall"},
         "comparison": "ratio", "peers": peers, "limit": limit}
    t.update(extra)
    return t


def wall(tool):
    return {"tool": tool, "field": "wall"}


class EvaluateTests(unittest.TestCase):
    def one(self, target, b):
        return targets.evaluate([target], run({target["benchmark"]: b}))[0]

    def test_ratio_against_a_peer(self):
        b = bench({"haul": summary(1.0), "curl": summary(2.0)})
        self.assertEqual(self.one(ratio([wall("curl")], 0.5), b)["verdict"], "met")
        v = self.one(ratio([wall("curl")], 0.4), b)
        self.assertEqual(v["verdict"], "missed")
        self.assertEqual(v["detail"], "`haul` 1.00 s vs `curl` 2.00 s: 0.50× (limit 0.40×)")

    def test_ratio_against_the_larger_of_two_limits(self):
        b = bench({"haul": summary(2.2), "net": summary(0.5), "disk": summary(2.0)})
        v = self.one(ratio([wall("net"), wall("disk")], 1.15, combine="max"), b)
        self.assertEqual(v["verdict"], "met")
        self.assertEqual(v["reference"], 2.0)
        self.assertIn("max(`net` 0.50 s, `disk` 2.00 s) = 2.00 s: 1.10×", v["detail"])
        self.assertEqual(self.one(ratio([wall("net"), wall("disk")], 1.05, combine="max"), b)["verdict"], "missed")
        self.assertEqual(self.one(ratio([wall("net"), wall("disk")], 1.15, combine="min"), b)["verdict"], "missed")

    def test_ratio_with_slack_between_rows_of_one_tool(self):
        small, large = {"tool": "haul", "field": "rss_max", "size": 256 * MiB}, \
            {"tool": "haul", "field": "rss_max", "size": 4096 * MiB}
        b = bench({("haul", 256 * MiB): summary(1, rss=27.4), ("haul", 4096 * MiB): summary(1, rss=32.0)})
        self.assertEqual(self.one(ratio([small], 1.10, quantity=large, slack=2), b)["verdict"], "met")
        self.assertEqual(self.one(ratio([small], 1.10, quantity=large), b)["verdict"], "missed")

    def test_bound(self):
        b = bench({"haul": summary(1.0, rss=31.9)})
        t = {"id": "rss", "benchmark": "1", "text": "rss", "quantity": {"tool": "haul", "field": "rss"},
             "comparison": "bound", "limit": 32}
        v = self.one(t, b)
        self.assertEqual((v["verdict"], v["detail"]), ("met", "`haul` 31.9 MiB (limit 32.0 MiB)"))
        b["rows"][0]["summary"]["rss"] = 32.1
        self.assertEqual(self.one(t, b)["verdict"], "missed")

    def test_metric_true_and_its_note(self):
        t = {"id": "x", "benchmark": "2", "text": "exact", "quantity": {"metric": "exact"}, "comparison": "true"}
        b = {"rows": [], "metrics": {"exact": {"value": True, "unit": "bool", "note": "3 reruns", "label": "reruns"}}}
        self.assertEqual(self.one(t, b)["detail"], "reruns: yes; 3 reruns")
        b["metrics"]["exact"]["value"] = False
        self.assertEqual(self.one(t, b)["verdict"], "missed")

    def test_metric_ratio(self):
        t = ratio([{"metric": "allowed"}], 1.0, quantity={"metric": "fetched"})
        b = {"metrics": {"fetched": {"value": 40.0, "unit": "MiB"}, "allowed": {"value": 39.9, "unit": "MiB"}}}
        self.assertEqual(self.one(t, b)["verdict"], "missed")

    def test_a_failed_subject_misses_and_a_failed_peer_is_not_measured(self):
        b = bench({"haul": summary(1.0, failures=1), "curl": summary(2.0)})
        v = self.one(ratio([wall("curl")], 1.0), b)
        self.assertEqual((v["verdict"], v["detail"]), ("missed", "`haul` failed in 1 of 3 runs"))
        b = bench({"haul": summary(1.0), "curl": summary(2.0, failures=3)})
        self.assertEqual(self.one(ratio([wall("curl")], 1.0), b)["verdict"], "not measured")

    def test_absent_row_metric_or_skipped_benchmark(self):
        v = self.one(ratio([wall("dd")], 1.0), bench({"haul": summary(1.0)}, notes=["dd was skipped."]))
        self.assertEqual((v["verdict"], v["detail"]), ("not measured", "no row for `dd` in this run: dd was skipped."))
        t = {"id": "m", "benchmark": "1", "text": "m", "quantity": {"metric": "nope"}, "comparison": "true"}
        self.assertEqual(self.one(t, bench({}))["verdict"], "not measured")
        b = {"metrics": {"nope": {"value": None, "unit": "MiB", "note": "a rerun did not complete"}}}
        self.assertEqual(self.one(t, b)["detail"], "a rerun did not complete")
        self.assertEqual(self.one(t, {"skipped": "no haul -i yet"})["detail"], "no haul -i yet")

    def test_targets_of_benchmarks_not_run_are_left_out(self):
        t1, t2 = ratio([wall("curl")], 1.0), dict(ratio([wall("curl")], 1.0), id="u", benchmark="2")
        verdicts = targets.evaluate([t1, t2], run({"2": bench({"haul": summary(1.0), "curl": summary(2.0)})}))
        self.assertEqual([v["id"] for v in verdicts], ["u"])


class ValidateTests(unittest.TestCase):
    def test_every_problem_is_named(self):
        problems = targets.validate([
            {"id": "a", "benchmark": "1", "text": "x", "quantity": {"tool": "haul", "field": "speed"},
             "comparison": "ratio", "peers": [wall("a"), wall("b")], "limit": 1},
            {"id": "a", "benchmark": "1", "text": "x", "quantity": {"metric": "m"}, "comparison": "less"},
            {"id": "c", "benchmark": "1", "quantity": {"metric": "m"}, "comparison": "bound"},
        ])
        joined = "\n".join(problems)
        for expected in ("a: quantity: \"field\" must be one of", "a: several peers need \"combine\"",
                         "a: duplicate id", "a: \"comparison\" must be one of", "c: needs \"text\"",
                         "c: needs a numeric \"limit\""):
            self.assertIn(expected, joined)

    def test_load_reports_a_bad_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write("{\"targets\": [{\"id\": \"x\"}]}")
        try:
            with self.assertRaises(targets.TargetsError) as e:
                targets.load(f.name)
            self.assertIn("x: needs \"benchmark\"", str(e.exception))
        finally:
            os.unlink(f.name)

    def test_the_checked_in_targets_are_valid_and_name_known_benchmarks(self):
        loaded = targets.load(TARGETS_FILE)
        self.assertTrue(loaded)
        self.assertEqual({t["benchmark"] for t in loaded} - set(ALL), set())
        with open(TARGETS_FILE) as f:
            self.assertEqual(json.load(f)["schema"], "haul-bench-targets/1")


if __name__ == "__main__":
    unittest.main()
