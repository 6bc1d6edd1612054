"""The nginx fixture and /usr/bin/time, where they are installed (CI installs nginx-light)."""

import contextlib
import io
import os
import shutil
import tempfile
import unittest
import urllib.request

from haulbench import measure
from haulbench.fixture import Nginx, make_file, nginx_binary


@unittest.skipUnless(os.access(nginx_binary(), os.X_OK), "nginx is not installed")
class NginxFixtureTests(unittest.TestCase):
    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="haul-bench-test-")
        self.data = os.path.join(self.base, "data")
        os.makedirs(self.data)
        os.chmod(self.base, 0o755)
        make_file(os.path.join(self.data, "f.bin"), 100_000)
        self.addCleanup(shutil.rmtree, self.base, True)

    def get(self, url, first=None):
        request = urllib.request.Request(url, headers={"Range": f"bytes={first}-"} if first is not None else {})
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.headers, r.read()

    def test_validators_only_where_wanted_and_bytes_counted(self):
        with Nginx(self.base, self.data) as nginx:
            offset = nginx.log_offset()
            status, headers, body = self.get(nginx.url("f.bin"))
            self.assertEqual((status, len(body)), (200, 100_000))
            self.assertIsNotNone(headers["ETag"])
            self.assertIsNotNone(headers["Last-Modified"])
            status, headers, body = self.get(nginx.url("f.bin", location="novalidators"), first=60_000)
            self.assertEqual((status, len(body)), (206, 40_000))
            self.assertIsNone(headers["ETag"])
            self.assertIsNone(headers["Last-Modified"])
            status, headers, _ = self.get(nginx.url("f.bin", location="paced"))
            self.assertIsNotNone(headers["ETag"])
            self.assertEqual(nginx.bytes_since(offset, settle=0.2), (240_000, 3))
            proc = nginx.proc
        self.assertIsNotNone(proc.poll(), "nginx still runs after the with block")


@unittest.skipUnless(os.access(measure.TIME, os.X_OK), "/usr/bin/time is not installed")
class TimedTests(unittest.TestCase):
    def test_exit_status_wall_and_peak_memory(self):
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stderr(io.StringIO()) as logged:
            ok = measure.timed(["sh", "-c", "exit 0"], d, d)
            failed = measure.timed(["sh", "-c", "echo broken >&2; exit 3"], d, d)
            slow = measure.timed(["sleep", "30"], d, d, timeout=0.5)
            self.assertEqual(os.listdir(d), [])  # time's output file is read and removed
        self.assertEqual(ok["rc"], 0)
        self.assertGreater(ok["rss_kib"], 0)
        self.assertEqual((failed["rc"], failed["stderr"].strip()), (3, "broken"))
        self.assertEqual((slow["rc"], slow["stderr"]), (-9, "timed out after 0.5 s"))
        self.assertIn("exit 3: sh -c", logged.getvalue())


if __name__ == "__main__":
    unittest.main()
