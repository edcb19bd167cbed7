"""Figures drawn with matplotlib (Agg, no window): line plots with units on every axis and a legend.

::

    from hydro.tools.plots import line_plot
    line_plot("out/forces.png", time, [("Cube", force)], title="cube_on_box.usda (env 0)",
              xlabel="time", xunit="s", ylabel="|net contact force|", yunit="N")

The file type follows the path's extension: ``.png`` (raster, ``dpi``), ``.svg`` or ``.pdf``
(vector). Figures are made with matplotlib's object API on an Agg canvas, so a plot never opens
a window nor changes pyplot's backend or state in the caller's session. matplotlib is imported
on first use; without it, the error says what to install.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import shown

__all__ = ["FORMATS", "line_plot", "line_styles", "styled_figure", "save_figure"]

#: File types by extension.
FORMATS = ("png", "svg", "pdf")

#: matplotlib settings of every figure (applied while it is drawn and saved).
STYLE = {
    "font.size": 10.0,
    "axes.titlesize": 11.0,
    "axes.labelsize": 10.0,
    "axes.grid": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.8,
    "legend.frameon": False,
    "legend.fontsize": 9.0,
    "lines.linewidth": 1.6,
    "svg.fonttype": "none",  # SVG text stays text
    "pdf.fonttype": 42,  # TrueType in PDFs
}


#: Line colours (matplotlib's tab10, its default cycle) and line styles: series k gets colour k mod 10 and the next style every 10 series, so up to 40
#: series are told apart by colour and dash; markers then tell further rounds apart.
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")
DASHES = ("-", "--", ":", "-.")
MARKERS = (None, "o", "s", "^", "v", "D")


def line_styles(count: int) -> list:
    """``count`` distinct ``(colour, linestyle, marker)`` for the lines of one plot."""
    out = []
    for k in range(int(count)):
        rnd = k // len(COLORS)
        out.append((COLORS[k % len(COLORS)], DASHES[rnd % len(DASHES)],
                    MARKERS[(rnd // len(DASHES)) % len(MARKERS)]))
    return out


def _matplotlib():
    """``(rc_context, Figure, FigureCanvasAgg)``; a clear error when matplotlib is missing."""
    try:
        from matplotlib import rc_context
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise RuntimeError(f"hydro's plots need matplotlib: pip install 'matplotlib>=3.8' ({exc})") from None
    return rc_context, Figure, FigureCanvasAgg


def _axis_label(label: str, unit: str, which: str) -> str:
    if not isinstance(unit, str) or not unit.strip():
        raise ValueError(f"{which}unit must name the unit of the {which} axis (e.g. 's', 'N'), got {shown(unit)}")
    if not isinstance(label, str) or not label.strip():
        raise ValueError(f"{which}label must say what the {which} axis shows, got {shown(label)}")
    return f"{label} ({unit})"


def styled_figure(*, size=(9.0, 5.0)):
    """A matplotlib ``Figure`` with hydro's style on an Agg canvas and one axes: ``(figure, axes)``.

    ``size`` is (width, height) in inches. Draw on the axes, then :func:`save_figure`.
    """
    rc_context, Figure, FigureCanvasAgg = _matplotlib()
    with rc_context(STYLE):
        fig = Figure(figsize=size, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    return fig, ax


def _format(path) -> str:
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise ValueError(f"plot path {os.fspath(path)!r} must end in one of {', '.join('.' + f for f in FORMATS)}")
    return ext


def save_figure(fig, path, *, dpi: int = 100) -> str:
    """Write ``fig`` to ``path`` in the format its extension names (:data:`FORMATS`); returns the path."""
    from .outputs import atomic_file

    fmt = _format(path)
    rc_context, _, _ = _matplotlib()
    with rc_context(STYLE), atomic_file(path) as tmp:  # the picture appears whole or not at all
        fig.savefig(tmp, format=fmt, dpi=dpi, facecolor="white")
    return os.fspath(path)


def line_plot(path, x, series, *, title: str = "", xlabel: str, xunit: str, ylabel: str, yunit: str,
              size=(9.0, 5.0), dpi: int = 100):
    """Plot ``series`` (a list of ``(name, y)``, each y as long as ``x``) against ``x``, one line
    each (distinct colour × line style: :func:`line_styles`) with a legend, into ``path`` (.png, .svg or .pdf). Axis labels read ``label (unit)``.
    Returns the matplotlib ``Figure`` (already written)."""
    xlabel_text = _axis_label(xlabel, xunit, "x")
    ylabel_text = _axis_label(ylabel, yunit, "y")
    _format(path)  # a bad extension fails before anything is drawn
    x = np.asarray(x, dtype=float).reshape(-1)
    lines = []
    for name, y in series:
        y = np.asarray(y, dtype=float).reshape(-1)
        if y.shape != x.shape:
            raise ValueError(f"series {name!r} has {y.size} values for {x.size} x values")
        lines.append((str(name), y))
    fig, ax = styled_figure(size=size)
    rc_context, _, _ = _matplotlib()
    with rc_context(STYLE):
        for (name, y), (color, dash, marker) in zip(lines, line_styles(len(lines))):
            marker = "." if x.size == 1 and marker is None else marker
            ax.plot(x, y, label=name, color=color, linestyle=dash, marker=marker,
                    markevery=max(1, x.size // 12) if marker and x.size > 1 else None)
        ax.set_xlabel(xlabel_text)
        ax.set_ylabel(ylabel_text)
        if title:
            ax.set_title(title, loc="left")
        if x.size:
            ax.set_xlim(float(x.min()), float(x.max()) if x.max() > x.min() else float(x.min()) + 1.0)
        values = np.concatenate([y[np.isfinite(y)] for _, y in lines] or [np.zeros(0)])
        if values.size and values.min() >= 0.0:  # magnitudes: from zero, with a margin above the peak
            ax.set_ylim(0.0, 1.05 * values.max() if values.max() > 0.0 else 1.0)
        if lines:
            ax.legend(loc="best", ncols=1 if len(lines) <= 8 else 2)
    save_figure(fig, path, dpi=dpi)
    return fig
