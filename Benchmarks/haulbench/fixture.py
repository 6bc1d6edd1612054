"""The private nginx the benchmarks download from, and the files it serves.

Two servers on 127.0.0.1 (ephemeral ports, or --port N and N+1):
  plain    sendfile from the data directory; /paced/ serves the same files at the rate set by
           set_pace() (benchmark 4 stops a download at 95 % with it); /novalidators/ is paced
           alike and sends neither ETag nor Last-Modified (`etag off`, an empty Last-Modified
           removes the header), the case in which Haul must re-fetch an overlap to resume.
  limited  2 MiB/s per connection (limit_rate 2m, sndbuf=64k).
Both log "$request_uri $status $body_bytes_sent" so a benchmark can count what was sent.

nginx runs in the foreground as our child and is asked to die with us (PR_SET_PDEATHSIG), so
it stops on every exit path: `with Nginx(...)`, an exception, Ctrl-C, SIGTERM, even SIGKILL.
"""

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time

from . import MiB
from .measure import log

PR_SET_PDEATHSIG = 1


def nginx_binary():
    return shutil.which("nginx") or "/usr/sbin/nginx"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def make_file(path, size, source=None):
    """Random bytes (nothing compresses them); a large file may repeat a smaller random one."""
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    if source and os.path.getsize(source) < size and size % os.path.getsize(source) == 0:
        with open(path, "wb") as out:
            for _ in range(size // os.path.getsize(source)):
                with open(source, "rb") as src:
                    shutil.copyfileobj(src, out, 8 * MiB)
        return
    with open(path, "wb") as out, open("/dev/urandom", "rb") as rnd:
        left = size
        while left:
            chunk = rnd.read(min(left, 8 * MiB))
            out.write(chunk)
            left -= len(chunk)


class Nginx:
    def __init__(self, base, data, port=None):
        self.base, self.data, self.port = base, data, port
        self.access_log = os.path.join(base, "access.log")
        self.pace_file = os.path.join(base, "pace.conf")
        self.conf = os.path.join(base, "nginx.conf")
        self.proc = None
        self.plain = self.limited = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def config(self):
        base, data = self.base, self.data
        user = "user root root;" if os.geteuid() == 0 else ""
        temp = "\n".join(f"  {k}_temp_path {base}/tmp_{k};"
                         for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        return f"""
worker_processes 2;
daemon off;
master_process on;
pid {base}/nginx.pid;
error_log {base}/error.log warn;
{user}
events {{ worker_connections 1024; }}
http {{
  access_log off;
  log_format bench '$request_uri $status $body_bytes_sent $request_time';
{temp}
  types {{ }}
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{self.plain};
    root {data};
    access_log {self.access_log} bench;
    location /paced/ {{ alias {data}/; include {self.pace_file}; }}
    location /novalidators/ {{ alias {data}/; include {self.pace_file}; etag off; add_header Last-Modified ""; }}
  }}
  server {{
    listen 127.0.0.1:{self.limited} sndbuf=64k;
    root {data};
    limit_rate 2m;
    access_log {self.access_log} bench;
  }}
}}
"""

    def start(self, attempts=3):
        """Starts nginx and waits until both servers accept; ephemeral ports that another
        process took in the meantime are replaced (up to `attempts` times)."""
        for attempt in range(attempts):
            self.plain = self.port or free_port()
            self.limited = self.port + 1 if self.port else free_port()
            self.set_pace(None, reload=False)
            with open(self.conf, "w") as f:
                f.write(self.config())
            err = open(os.path.join(self.base, "nginx.out"), "w")
            self.proc = subprocess.Popen([nginx_binary(), "-p", self.base, "-c", self.conf], stdout=subprocess.DEVNULL,
                                         stderr=err, preexec_fn=_die_with_parent)
            err.close()
            for _ in range(100):
                if self.proc.poll() is not None:
                    break
                try:
                    with socket.create_connection(("127.0.0.1", self.plain), timeout=0.2), \
                            socket.create_connection(("127.0.0.1", self.limited), timeout=0.2):
                        return
                except OSError:
                    time.sleep(0.05)
            self.stop()
            why = open(os.path.join(self.base, "nginx.out")).read().strip()
            if self.port or "Address already in use" not in why or attempt == attempts - 1:
                raise RuntimeError(f"nginx did not start on 127.0.0.1:{self.plain}/{self.limited}: {why}")
            log(f"port taken ({why}); trying others")

    def set_pace(self, rate, reload=True):
        """Rate of /paced/ and /novalidators/ (None: unlimited), e.g. "256m"."""
        with open(self.pace_file, "w") as f:
            f.write(f"limit_rate {rate};\n" if rate else "limit_rate 0;\n")
        if reload:
            subprocess.run([nginx_binary(), "-p", self.base, "-c", self.conf, "-s", "reload"], check=True,
                           stderr=subprocess.DEVNULL)
            time.sleep(0.5)  # old workers finish, new ones take over

    def url(self, name, limited=False, location=None):
        """URL of a served file; location "paced" or "novalidators" on the plain server."""
        port = self.limited if limited else self.plain
        path = f"/{location}/{name}" if location else f"/{name}"
        return f"http://127.0.0.1:{port}{path}"

    def log_offset(self):
        return os.path.getsize(self.access_log) if os.path.exists(self.access_log) else 0

    def bytes_since(self, offset, settle=0.3):
        """Body bytes nginx sent in requests logged after `offset`, and how many requests."""
        time.sleep(settle)  # nginx logs a request when its response is done
        with open(self.access_log, "rb") as f:
            f.seek(offset)
            lines = f.read().decode().splitlines()
        total = sum(int(parts[2]) for parts in (line.split() for line in lines) if len(parts) >= 3)
        return total, len(lines)

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)  # fast shutdown: workers end open transfers too
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
