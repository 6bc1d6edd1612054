"""The throughput chart (matplotlib): one panel per benchmark with a CHART title, MiB/s per tool."""

from .benchmarks import ALL

HAUL, PEER = "#d9480f", "#868e96"


def panels(run):
    """(title, [(tool, MiB/s)]) for each charted benchmark of the run, tools in table order."""
    out = []
    for key, module in ALL.items():
        b = run["benchmarks"].get(key)
        if module.CHART and b and not b.get("skipped") and b.get("rows"):
            bars = [(r["tool"], r["summary"]["mibps"]) for r in b["rows"] if r["summary"].get("mibps") is not None]
            if bars:
                out.append((module.CHART, bars))
    return out


def chart(run, path):
    """Writes the chart to path; False when there is nothing to draw."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = panels(run)
    if not groups:
        return False
    height = 1.0 + 0.45 * sum(len(bars) for _, bars in groups) + 0.5 * len(groups)
    fig, axes = plt.subplots(len(groups), 1, figsize=(7, height), squeeze=False)
    for ax, (title, bars) in zip(axes[:, 0], groups):
        names = [name for name, _ in bars][::-1]
        values = [value for _, value in bars][::-1]
        drawn = ax.barh(names, values, color=[HAUL if n.startswith("haul") else PEER for n in names])
        ax.bar_label(drawn, fmt="%.0f", padding=3, fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("MiB/s (median; higher is better)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.set_xlim(0, max(values) * 1.18)
    fig.suptitle(f"Haul benchmarks, {run['date']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
