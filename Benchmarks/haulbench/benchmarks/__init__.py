"""One module per benchmark. Each has KEY, TITLE, CHART (a chart panel's title, or None),
NEEDS (the commands it runs besides haul), measure(ctx) -> its results (a dict that goes into
the run file) and render(results) -> its markdown section. render only formats: every number
it prints was computed by measure and stored in the run file."""

from . import limited, many, memory, resume, single

ALL = {m.KEY: m for m in (single, limited, many, resume, memory)}
