"""The tools the benchmarks run: finding them, and installing them only when asked (--install).

Commands come from Debian packages (apt-get); matplotlib, for the chart, from PyPI into a
virtual environment at Benchmarks/.venv, which `Benchmarks/run` then uses by itself.
"""

import os
import shutil
import subprocess
import sys

from .measure import log

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(BENCH_DIR, ".venv")
VENV_PYTHON = os.path.join(VENV, "bin", "python")

# command (or absolute path) -> the Debian package that provides it
PACKAGES = {
    "nginx": "nginx-light", "/usr/bin/time": "time", "curl": "curl", "wget": "wget", "aria2c": "aria2",
    "axel": "axel", "cmp": "diffutils", "dd": "coreutils", "sha256sum": "coreutils", "valgrind": "valgrind",
    "objcopy": "binutils", "openssl": "openssl", "sync": "coreutils",
}
COMMON = ["nginx", "/usr/bin/time", "curl", "cmp"]


class MissingTools(RuntimeError):
    """Some tools are missing; the message says which and how to get them."""


def find(command):
    if os.path.isabs(command):
        return command if os.access(command, os.X_OK) else None
    return shutil.which(command) or next((p for p in (f"/usr/sbin/{command}", f"/sbin/{command}")
                                          if os.access(p, os.X_OK)), None)


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def missing(commands):
    """The commands (deduplicated, in order) that are not installed."""
    return [c for c in dict.fromkeys(COMMON + list(commands)) if find(c) is None]


def check(commands, plot):
    """Raises MissingTools unless every command (and matplotlib when `plot`) is there."""
    absent = missing(commands)
    lines = [f"  {c} (Debian package {PACKAGES.get(c, '?')})" for c in absent]
    if plot and not have_matplotlib():
        lines.append("  matplotlib, for the chart (PyPI, into Benchmarks/.venv; or pass --no-plot)")
    if lines:
        raise MissingTools("missing:\n" + "\n".join(lines) +
                           "\nRun `Benchmarks/run --install` to install them (apt-get, and a virtual environment "
                           "for matplotlib), then run the benchmarks again.")


def _apt(packages):
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    log(f"apt-get install {' '.join(packages)}")
    subprocess.run(sudo + ["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], check=True,
                   env=env, stdout=subprocess.DEVNULL)


def install(commands):
    """Installs the missing commands' packages and a virtual environment with matplotlib."""
    system_python = shutil.which("python3") or sys.executable
    packages = list(dict.fromkeys(PACKAGES[c] for c in missing(commands)))
    venv_ok = subprocess.run([system_python, "-c", "import ensurepip, venv"], capture_output=True).returncode == 0
    if not os.path.exists(VENV_PYTHON) and not venv_ok:
        packages.append("python3-venv")
    if packages:
        _apt(packages)
    else:
        log("every tool is installed")
    if not os.path.exists(VENV_PYTHON):
        log(f"creating {VENV}")
        subprocess.run([system_python, "-m", "venv", VENV], check=True)
    r = subprocess.run([VENV_PYTHON, "-c", "import matplotlib"], capture_output=True)
    if r.returncode != 0:
        log("pip install matplotlib (PyPI)")
        subprocess.run([VENV_PYTHON, "-m", "pip", "install", "-q", "matplotlib"], check=True)
    log(f"ready; Benchmarks/run uses {VENV_PYTHON} from now on")
