"""Line plots written as PNG with NumPy and zlib only (no plotting dependency).

:func:`line_plot` draws time series with axes, tick labels, a title and a legend in a small
built-in bitmap font (3×5 pixels per character, scaled; letters print as capitals);
:func:`write_png` writes any (H, W, 3) uint8 image.
"""

from __future__ import annotations

import math
import struct
import zlib

import numpy as np

__all__ = ["write_png", "line_plot"]

# 3×5 glyphs, rows top to bottom, '#' = ink
_GLYPHS = {
    "0": "### #.# #.# #.# ###", "1": ".#. ##. .#. .#. ###", "2": "### ..# ### #.. ###", "3": "### ..# ### ..# ###",
    "4": "#.# #.# ### ..# ..#", "5": "### #.. ### ..# ###", "6": "### #.. ### #.# ###", "7": "### ..# .#. .#. .#.",
    "8": "### #.# ### #.# ###", "9": "### #.# ### ..# ###", "A": ".#. #.# ### #.# #.#", "B": "##. #.# ##. #.# ##.",
    "C": "### #.. #.. #.. ###", "D": "##. #.# #.# #.# ##.", "E": "### #.. ### #.. ###", "F": "### #.. ### #.. #..",
    "G": "### #.. #.# #.# ###", "H": "#.# #.# ### #.# #.#", "I": "### .#. .#. .#. ###", "J": "..# ..# ..# #.# ###",
    "K": "#.# #.# ##. #.# #.#", "L": "#.. #.. #.. #.. ###", "M": "#.# ### ### #.# #.#", "N": "##. #.# #.# #.# #.#",
    "O": "### #.# #.# #.# ###", "P": "### #.# ### #.. #..", "Q": "### #.# #.# ### ..#", "R": "##. #.# ##. #.# #.#",
    "S": "### #.. ### ..# ###", "T": "### .#. .#. .#. .#.", "U": "#.# #.# #.# #.# ###", "V": "#.# #.# #.# #.# .#.",
    "W": "#.# #.# ### ### #.#", "X": "#.# #.# .#. #.# #.#", "Y": "#.# #.# .#. .#. .#.", "Z": "### ..# .#. #.. ###",
    ".": "... ... ... ... .#.", "-": "... ... ### ... ...", "_": "... ... ... ... ###", "/": "..# ..# .#. #.. #..",
    ":": "... .#. ... .#. ...", "(": ".#. #.. #.. #.. .#.", ")": ".#. ..# ..# ..# .#.", "|": ".#. .#. .#. .#. .#.",
    "=": "... ### ... ### ...", "+": "... .#. ### .#. ...", ",": "... ... ... .#. #..", "%": "#.# ..# .#. #.. #.#",
    "[": "##. #.. #.. #.. ##.", "]": ".## ..# ..# ..# .##", " ": "... ... ... ... ...", "?": "### ..# .## ... .#.",
}
_FONT = {k: np.array([[c == "#" for c in row] for row in v.split()], dtype=bool) for k, v in _GLYPHS.items()}
PALETTE = np.array([(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
                    (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)], dtype=np.uint8)


def write_png(path, image) -> None:
    """Write an (H, W, 3) uint8 RGB image as a PNG file."""
    img = np.ascontiguousarray(image, dtype=np.uint8)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"an image must be (H, W, 3) uint8, got shape {img.shape}")
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(png)


def _text(img, x, y, text, color, scale=2):
    """Draw ``text`` with its top-left corner at (x, y) pixels."""
    for ch in str(text).upper():
        g = _FONT.get(ch, _FONT["?"])
        big = np.kron(g, np.ones((scale, scale), dtype=bool))
        h, w = big.shape
        y0, x0 = max(y, 0), max(x, 0)
        y1, x1 = min(y + h, img.shape[0]), min(x + w, img.shape[1])
        if y1 > y0 and x1 > x0:
            region = img[y0:y1, x0:x1]
            region[big[y0 - y:y1 - y, x0 - x:x1 - x]] = color
        x += (3 + 1) * scale


def _text_width(text, scale=2):
    return len(str(text)) * 4 * scale


def _line(img, x0, y0, x1, y1, color, width=2):
    n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
    xs = np.rint(np.linspace(x0, x1, n)).astype(int)
    ys = np.rint(np.linspace(y0, y1, n)).astype(int)
    for dx in range(width):
        for dy in range(width):
            xx, yy = xs + dx, ys + dy
            ok = (xx >= 0) & (xx < img.shape[1]) & (yy >= 0) & (yy < img.shape[0])
            img[yy[ok], xx[ok]] = color


def _nice_ticks(lo, hi, count=5):
    if not math.isfinite(lo) or not math.isfinite(hi) or hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = min((s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw), default=10 * mag)
    start = math.floor(lo / step) * step
    ticks = []
    v = start
    while v <= hi + 1e-9 * step:
        if v >= lo - 1e-9 * step:
            ticks.append(round(v, 12))
        v += step
    return ticks, step


def _label(v, step):
    """``v`` with as many decimals as the tick step needs (2.5 → one, 0.02 → two)."""
    digits = 0
    while digits < 8 and abs(round(step, digits) - step) > 1e-9 * step:
        digits += 1
    return f"{v:.{digits}f}"


def line_plot(path, x, series, *, title="", xlabel="", ylabel="", size=(900, 500)) -> None:
    """Plot ``series`` (a list of ``(name, y)``, y as long as ``x``) against ``x`` into a PNG."""
    W, H = size
    img = np.full((H, W, 3), 255, dtype=np.uint8)
    left, right, top, bottom = 80, 20, 40, 50
    x = np.asarray(x, dtype=float)
    ys = [np.asarray(y, dtype=float) for _, y in series]
    finite = [y[np.isfinite(y)] for y in ys]
    ymin = min([float(v.min()) for v in finite if len(v)] + [0.0])
    ymax = max([float(v.max()) for v in finite if len(v)] + [ymin + 1e-9])
    pad = 0.05 * (ymax - ymin)
    ymin, ymax = ymin - (pad if ymin < 0 else 0.0), ymax + pad
    xmin, xmax = (float(x.min()), float(x.max())) if len(x) else (0.0, 1.0)
    if xmax <= xmin:
        xmax = xmin + 1.0
    xt, xstep = _nice_ticks(xmin, xmax)
    yt, ystep = _nice_ticks(ymin, ymax)
    ymin, ymax = min(ymin, yt[0]), max(ymax, yt[-1])

    def px(v):
        return left + (v - xmin) / (xmax - xmin) * (W - left - right)

    def py(v):
        return H - bottom - (v - ymin) / (ymax - ymin) * (H - top - bottom)

    grid, ink = (225, 225, 225), (40, 40, 40)
    for v in yt:
        _line(img, left, py(v), W - right, py(v), grid, 1)
        s = _label(v, ystep)
        _text(img, left - 6 - _text_width(s), int(py(v)) - 5, s, ink)
    for v in xt:
        _line(img, px(v), top, px(v), H - bottom, grid, 1)
        s = _label(v, xstep)
        _text(img, int(px(v)) - _text_width(s) // 2, H - bottom + 8, s, ink)
    _line(img, left, H - bottom, W - right, H - bottom, ink, 1)
    _line(img, left, top, left, H - bottom, ink, 1)
    for k, y in enumerate(ys):
        color = PALETTE[k % len(PALETTE)]
        ok = np.isfinite(y)
        for i in range(len(x) - 1):
            if ok[i] and ok[i + 1]:
                _line(img, px(x[i]), py(y[i]), px(x[i + 1]), py(y[i + 1]), color)
        if len(x) == 1 and ok[0]:
            _line(img, px(x[0]), py(y[0]), px(x[0]) + 1, py(y[0]), color)
    _text(img, left, 12, title, ink)
    _text(img, (W - _text_width(xlabel)) // 2, H - 20, xlabel, ink)
    _text(img, 6, top - 16, ylabel, ink)
    # legend, top right
    lx = W - right - 8 - max([_text_width(n) for n, _ in series] + [0]) - 20
    for k, (name, _) in enumerate(series[:12]):
        yy = top + 8 + 16 * k
        img[yy:yy + 10, lx:lx + 14] = PALETTE[k % len(PALETTE)]
        _text(img, lx + 20, yy, name, ink)
    write_png(path, img)
