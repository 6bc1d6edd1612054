import unittest

from haulbench import compare

from .support import bench, run, summary


class CompareTests(unittest.TestCase):
    def runs(self):
        a = run({"1": bench({"haul -x 1": summary(2.0, cpu=1.0, rss=26.0), "curl": summary(3.0)}),
                 "2": bench({"haul": summary(1.5)})},
                [{"id": "1.wall", "benchmark": "1", "text": "t", "verdict": "missed", "detail": "d"}])
        b = run({"1": bench({"haul -x 1": summary(1.5, cpu=1.1, rss=26.0), "dd oflag=direct": summary(0.4)})},
                [{"id": "1.wall", "benchmark": "1", "text": "t", "verdict": "met", "detail": "1.5 s vs 1.6 s"},
                 {"id": "1.new", "benchmark": "1", "text": "t", "verdict": "met", "detail": "d"}])
        a["benchmarks"]["1"]["metrics"] = {"disk_limit": {"value": None, "unit": "s"}}
        b["benchmarks"]["1"]["metrics"] = {"disk_limit": {"value": 0.4, "unit": "s"}}
        return a, b

    def test_per_tool_changes(self):
        text = compare.compare(*self.runs())
        line = next(l for l in text.splitlines() if l.strip().startswith("haul -x 1"))
        self.assertEqual(line.split(), ["haul", "-x", "1", "2.00", "1.50", "-25.0", "%", "1.00", "1.10", "+10.0", "%",
                                        "26.0", "26.0", "+0.0", "%"])

    def test_rows_and_benchmarks_in_one_run_only(self):
        lines = compare.compare(*self.runs()).splitlines()
        self.assertIn("only in A", next(l for l in lines if l.strip().startswith("curl")))
        self.assertIn("only in B", next(l for l in lines if l.strip().startswith("dd oflag=direct")))
        i = lines.index("2. 32 MiB from a server limited to 2 MiB/s per connection (physical limit 1.0 s)")
        self.assertEqual(lines[i + 1], "  only in A")

    def test_metrics_and_verdict_changes(self):
        text = compare.compare(*self.runs())
        self.assertIn("  disk_limit: — → 0.40 s", text)
        self.assertIn("* 1.wall: missed → met (1.5 s vs 1.6 s)", text)
        self.assertIn("* 1.new: absent → met", text)


if __name__ == "__main__":
    unittest.main()
