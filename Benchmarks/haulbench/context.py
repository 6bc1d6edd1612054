"""What every benchmark gets: the haul binary, directories, the nginx fixture, repetitions."""

import os

from . import MiB
from .fixture import make_file
from .measure import log


class Context:
    """One run's shared state. `base` is a fresh directory: data/ (served files), dl/ (where
    downloads go, emptied before every run of a tool) and scratch files; deleted at the end."""

    def __init__(self, haul, base, reps, warmup, resume_reps, quick):
        self.haul, self.base = haul, base
        self.data = os.path.join(base, "data")
        self.dl = os.path.join(base, "dl")
        os.makedirs(self.data)
        os.makedirs(self.dl)
        for d in (base, self.data):
            os.chmod(d, 0o755)  # nginx's workers read data/ as root or nobody
        self.reps, self.warmup, self.resume_reps, self.quick = reps, warmup, resume_reps, quick
        self.nginx = None

    def file(self, name, size, source=None):
        """A served file of random bytes (made once per run); returns its path."""
        path = os.path.join(self.data, name)
        if not (os.path.exists(path) and os.path.getsize(path) == size):
            log(f"generating {name} ({size / MiB:.0f} MiB)")
        make_file(path, size, source)
        return path
