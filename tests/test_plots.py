"""hydro.tools.plots: matplotlib figures with units on every axis, a legend, PNG/SVG/PDF by the path."""

import sys

import numpy as np
import pytest

from hydro.tools.plots import line_plot

T = np.linspace(0.0, 2.0, 81)
SERIES = [("Cube", 9.81 * (1 - np.exp(-5 * T))), ("Sphere", 4.0 + np.sin(3 * T)), ("Lid", np.full(T.shape, np.nan))]


def _plot(path, series=SERIES, **kw):
    opts = dict(title="cube_on_box.usda (env 0)", xlabel="time", xunit="s", ylabel="|net contact force|", yunit="N")
    opts.update(kw)
    return line_plot(path, T, series, **opts)


def test_png_figure_has_one_line_per_series_labels_with_units_and_a_legend(tmp_path):
    from matplotlib.image import imread

    path = tmp_path / "forces.png"
    fig = _plot(path, dpi=80)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "time (s)" and ax.get_ylabel() == "|net contact force| (N)"
    assert ax.get_title(loc="left") == "cube_on_box.usda (env 0)"
    assert [line.get_label() for line in ax.get_lines()] == ["Cube", "Sphere", "Lid"]
    np.testing.assert_array_equal(ax.get_lines()[1].get_ydata(), SERIES[1][1])
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["Cube", "Sphere", "Lid"]
    assert ax.get_ylim()[0] == 0.0 and ax.get_xlim() == (0.0, 2.0)  # magnitudes from zero, the whole time span
    image = imread(path)
    assert image.shape[:2] == (400, 720)  # 9 x 5 inches at 80 dpi
    colours = {tuple(c) for c in np.round(image[..., :3] * 255).astype(int).reshape(-1, 3)}
    assert (31, 119, 180) in colours and (255, 127, 14) in colours  # the first two series' lines are drawn


@pytest.mark.parametrize("ext, magic", [("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_vector_formats_follow_the_path(tmp_path, ext, magic):
    path = tmp_path / f"forces.{ext}"
    _plot(path)
    data = path.read_bytes()
    assert data.startswith(magic)
    if ext == "svg":  # text stays text: the labels are searchable
        assert b"time (s)" in data and b"Sphere" in data


def test_a_single_sample_and_no_series_still_make_a_figure(tmp_path):
    fig = line_plot(tmp_path / "one.png", [0.5], [("Cube", [2.0])], xlabel="time", xunit="s", ylabel="force",
                    yunit="N")
    assert len(fig.axes[0].get_lines()) == 1
    fig = line_plot(tmp_path / "none.png", T, [], xlabel="time", xunit="s", ylabel="force", yunit="N")
    assert fig.axes[0].get_lines() == [] and (tmp_path / "none.png").exists()


@pytest.mark.parametrize("kw, message", [
    ({"yunit": ""}, "yunit must name the unit"),
    ({"xunit": None}, "xunit must name the unit"),
    ({"xlabel": " "}, "xlabel must say what"),
])
def test_every_axis_needs_a_label_and_a_unit(tmp_path, kw, message):
    with pytest.raises(ValueError, match=message):
        _plot(tmp_path / "x.png", **kw)
    assert not (tmp_path / "x.png").exists()


def test_bad_paths_and_series_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"must end in one of \.png, \.svg, \.pdf"):
        _plot(tmp_path / "forces.jpg")
    with pytest.raises(ValueError, match="series 'Short' has 3 values for 81 x values"):
        _plot(tmp_path / "forces.png", series=[("Short", [1.0, 2.0, 3.0])])


def test_without_matplotlib_the_error_says_what_to_install(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    with pytest.raises(RuntimeError, match=r"pip install 'matplotlib>=3.8'"):
        _plot(tmp_path / "forces.png")


def test_twelve_bodies_get_twelve_distinct_lines(tmp_path):
    """A 12-body run: colour × line style never repeats (Body00 and Body10 were the same blue)."""
    from hydro.tools.plots import line_styles

    t = np.linspace(0.0, 1.0, 50)
    series = [(f"/World/Body{k:02d}", (k + 1) * np.ones_like(t)) for k in range(12)]
    fig = line_plot(tmp_path / "forces.png", t, series, xlabel="time", xunit="s", ylabel="|F|", yunit="N")
    lines = fig.axes[0].get_lines()
    styles = [(line.get_color(), line.get_linestyle(), line.get_marker()) for line in lines]
    assert len(set(styles)) == 12 and styles[0] != styles[10]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [n for n, _ in series]
    assert len(set(line_styles(60))) == 60  # beyond colour × dash, markers keep them apart
