"""Markdown reports of an evaluation, with a PNG plot beside them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smartcache.eval.harness import format_table


def plot_systems(report: dict[str, Any], path: Path) -> None:
    """Hit recall and false-hit rate of every system, side by side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["systems"])
    recall = [report["systems"][n]["overall"]["hit_recall"] for n in names]
    false = [report["systems"][n]["overall"]["false_hit_rate"] for n in names]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(names)), 4))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], recall, width=0.4, label="hit recall")
    ax.bar([x + 0.2 for x in xs], false, width=0.4, label="false-hit rate")
    ax.set_xticks(list(xs), names, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.axhline(0.01, ls=":", lw=0.8, color="grey")
    ax.legend(fontsize=8)
    ax.set_title(f"{Path(report.get('cases', 'cases')).name}: {report['systems'][names[0]]['overall']['n']} cases")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(report: dict[str, Any], path: Path, command: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    png = path.with_suffix(".png")
    plot_systems(report, png)
    text = [f"# Evaluation: {report.get('cases', '')}", "", f"Produced by `{command}` "
            f"(encoder {report.get('encoder', '?')}, {report.get('seconds', 0):.0f} s).", "",
            f"![hit recall and false-hit rate per system]({png.name})", "",
            "## Overall and by category", "", format_table(report, "by_category"), "",
            "## By language", "", format_table(report, "by_lang").split("\n\nOracle")[0], ""]
    path.write_text("\n".join(text), encoding="utf-8")
