import unittest

from haulbench import MiB, stats

from .support import sample


class MedianTests(unittest.TestCase):
    def test_odd_even_and_empty(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)
        self.assertEqual(stats.median([4, 1, 2, 3]), 2.5)
        self.assertIsNone(stats.median([]))

    def test_missing_values_are_left_out(self):
        self.assertEqual(stats.median([None, 5, None, 1]), 3)
        self.assertIsNone(stats.median([None]))

    def test_ratio_and_percent_change(self):
        self.assertEqual(stats.ratio(3, 2), 1.5)
        self.assertIsNone(stats.ratio(3, 0))
        self.assertIsNone(stats.ratio(None, 2))
        self.assertAlmostEqual(stats.percent_change(2.0, 1.5), -25.0)
        self.assertIsNone(stats.percent_change(None, 1.5))


class SummarizeTests(unittest.TestCase):
    def rows(self):
        return [
            {"tool": "haul", "samples": [sample(1.0, cpu=0.5, rss_mib=20), sample(3.0, cpu=0.7, rss_mib=22),
                                         sample(2.0, cpu=0.6, rss_mib=21)]},
            {"tool": "curl", "samples": [sample(4.0, cpu=1.2), sample(4.4, cpu=1.2, rc=18),
                                         sample(4.2, cpu=1.2, ok=False)]},
        ]

    def test_medians_ranges_and_throughput(self):
        rows = stats.summarize(self.rows(), 64 * MiB, "haul")
        s = rows[0]["summary"]
        self.assertEqual((s["wall"], s["wall_min"], s["wall_max"]), (2.0, 1.0, 3.0))
        self.assertAlmostEqual(s["cpu"], 0.6)
        self.assertAlmostEqual(s["rss"], 21.0)
        self.assertAlmostEqual(s["rss_max"], 22.0)
        self.assertAlmostEqual(s["mibps"], 32.0)
        self.assertEqual((s["n"], s["failures"]), (3, 0))

    def test_ratios_are_to_the_reference_row(self):
        rows = stats.summarize(self.rows(), 64 * MiB, "haul")
        self.assertEqual(rows[0]["summary"]["ratio"], 1.0)
        self.assertAlmostEqual(rows[1]["summary"]["ratio"], 4.2 / 2.0)
        self.assertAlmostEqual(rows[1]["summary"]["cpu_ratio"], 1.2 / 0.6)

    def test_a_bad_exit_or_a_wrong_file_is_a_failure(self):
        rows = stats.summarize(self.rows(), 64 * MiB, "haul")
        self.assertEqual(rows[1]["summary"]["failures"], 2)

    def test_without_a_reference_there_are_no_ratios(self):
        rows = stats.summarize(self.rows(), 64 * MiB, None)
        self.assertIsNone(rows[0]["summary"]["ratio"])

    def test_a_row_with_its_own_size(self):
        rows = [{"tool": "haul", "size": 256 * MiB, "samples": [sample(2.0)]}]
        stats.summarize(rows, None, None)
        self.assertAlmostEqual(rows[0]["summary"]["mibps"], 128.0)

    def test_row_lookup_matches_extra_keys(self):
        rows = [{"tool": "haul", "size": 1}, {"tool": "haul", "size": 2}]
        self.assertIs(stats.row(rows, "haul", size=2), rows[1])
        self.assertIsNone(stats.row(rows, "curl"))


if __name__ == "__main__":
    unittest.main()
