"""Small SVG line charts for the HTML report, written by hand: no plotting library.

A chart is a list of series (label, colour, dashed, points) drawn as polylines in one plot area,
with "nice" ticks on both axes (the x axis may be logarithmic), axis titles and a legend. Every
text that reaches the SVG goes through ``text()``: escaped, and packet strings made printable.
"""

import html
import math
import sys

from .text import safe

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22"]
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 58, 14, 14, 38
FEW_POINTS = 40  # a series with fewer points shows a dot on each


class Series:
    __slots__ = ("label", "color", "dashed", "points")

    def __init__(self, label, color, points, dashed=False):
        self.label = label
        self.color = color
        self.dashed = dashed
        self.points = points


def text(value):
    """A string as SVG/HTML text: unprintable characters escaped as the terminal shows them, then markup."""
    return html.escape(safe(str(value)), quote=True)


def nice_ticks(low, high, count=5):
    """About ``count`` round values from low to high (1, 2 or 5 times a power of ten apart)."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else [0.0]
    raw = (high - low) / max(1, count)
    if not math.isfinite(raw) or raw <= 0:  # a span beyond a float, or below its least step
        return [low]
    power = 10.0 ** math.floor(math.log10(raw))  # a float: an int power of 10**307 overflows the plot
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks, value = [], first
    while value <= high + step * 1e-9 and math.isfinite(value) and len(ticks) < 50:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return ticks


def _plottable(value):
    """A point's value as a finite float: a number beyond a float's range (a decoded count of 400 digits)
    drawn at the float's end, a NaN at zero."""
    try:
        number = float(value)
    except OverflowError:
        number = math.inf if value > 0 else -math.inf
    if math.isnan(number):
        return 0.0
    return min(max(number, -sys.float_info.max), sys.float_info.max)


def number_label(value):
    if abs(value) < 1e15 and value == int(value):
        return f"{int(value):,}"
    return f"{value:.3g}"


def seconds_label(seconds):
    """A duration with a unit that suits it: 250 µs, 1.5 ms, 2 s, 3 min, 2 h."""
    magnitude = abs(seconds)
    if magnitude == 0:
        return "0"
    for limit, scale, unit in ((1e-3, 1e6, "µs"), (1.0, 1e3, "ms"), (120.0, 1.0, "s"), (7200.0, 1 / 60, "min")):
        if magnitude < limit:
            return f"{seconds * scale:.3g} {unit}"
    return f"{seconds / 3600:.3g} h"


def line_chart(series, x_title, y_title, width=560, height=240, log_x=False, x_label=seconds_label,
               y_label=number_label, x_range=None, empty="no data"):
    """One SVG element: the series over shared axes. ``log_x``: x values are positive and drawn on a
    logarithmic scale with a tick per power of ten."""
    series = [Series(s.label, s.color, [(_plottable(x), _plottable(y)) for x, y in s.points], s.dashed)
              for s in series]
    points = [p for s in series for p in s.points]
    if not points:
        return _empty_chart(width, height, empty)
    xs = [math.log10(x) for x, _ in points] if log_x else [x for x, _ in points]
    x_low, x_high = x_range if x_range else (min(xs), max(xs))
    if x_high <= x_low:
        x_low, x_high = x_low - 0.5, x_high + 0.5
    y_high = max(y for _, y in points) or 1
    y_ticks = nice_ticks(0, y_high)
    y_high = max(y_high, y_ticks[-1])
    if log_x:
        x_ticks = [float(k) for k in range(math.floor(x_low), math.ceil(x_high) + 1)]
        x_low, x_high = x_ticks[0], x_ticks[-1] if x_ticks[-1] > x_ticks[0] else x_ticks[0] + 1
    else:
        x_ticks = [t for t in nice_ticks(x_low, x_high) if x_low <= t <= x_high]
    plot = _Plot(width, height, x_low, x_high, 0.0, y_high)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="{text(y_title)} by {text(x_title)}">']
    parts += plot.grid(x_ticks, y_ticks, (lambda t: x_label(10 ** t)) if log_x else x_label, y_label)
    parts.append(plot.titles(x_title, y_title))
    for item in series:
        scaled = [(math.log10(x) if log_x else x, y) for x, y in item.points]
        parts.append(plot.polyline(scaled, item.color, item.dashed))
    parts.append(_legend(series, width))
    parts.append("</svg>")
    return "".join(parts)


class _Plot:
    """The mapping from data to pixels inside the margins."""

    def __init__(self, width, height, x_low, x_high, y_low, y_high):
        self.width, self.height = width, height
        self.left, self.right = MARGIN_LEFT, width - MARGIN_RIGHT
        self.top, self.bottom = MARGIN_TOP, height - MARGIN_BOTTOM
        self.x_low, self.x_span = x_low, (x_high - x_low) or 1.0
        self.y_low, self.y_span = y_low, (y_high - y_low) or 1.0

    def x(self, value):
        return self.left + (value - self.x_low) / self.x_span * (self.right - self.left)

    def y(self, value):
        return self.bottom - (value - self.y_low) / self.y_span * (self.bottom - self.top)

    def grid(self, x_ticks, y_ticks, x_label, y_label):
        parts = [f'<rect x="{self.left}" y="{self.top}" width="{self.right - self.left}" '
                 f'height="{self.bottom - self.top}" class="plot-area"/>']
        for tick in y_ticks:
            y = self.y(tick)
            parts.append(f'<line x1="{self.left}" x2="{self.right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                         f'<text x="{self.left - 5}" y="{y + 4:.1f}" class="tick" text-anchor="end">'
                         f'{text(y_label(tick))}</text>')
        for tick in x_ticks:
            x = self.x(tick)
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.top}" y2="{self.bottom}" class="grid"/>'
                         f'<text x="{x:.1f}" y="{self.bottom + 14}" class="tick" text-anchor="middle">'
                         f'{text(x_label(tick))}</text>')
        return parts

    def titles(self, x_title, y_title):
        middle_y = (self.top + self.bottom) / 2
        return (f'<text x="{(self.left + self.right) / 2:.1f}" y="{self.height - 6}" class="axis-title" '
                f'text-anchor="middle">{text(x_title)}</text>'
                f'<text x="12" y="{middle_y:.1f}" class="axis-title" text-anchor="middle" '
                f'transform="rotate(-90 12 {middle_y:.1f})">{text(y_title)}</text>')

    def polyline(self, points, color, dashed):
        coords = " ".join(f"{self.x(x):.1f},{self.y(y):.1f}" for x, y in points)
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        line = f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.6"{dash}/>'
        if len(points) < FEW_POINTS:
            line += "".join(f'<circle cx="{self.x(x):.1f}" cy="{self.y(y):.1f}" r="2.5" fill="{color}"/>'
                            for x, y in points)
        return line


def _legend(series, width):
    labelled = [item for item in series if item.label]
    if not labelled:
        return ""
    x, y = width - MARGIN_RIGHT - 156, MARGIN_TOP + 8
    parts = [f'<rect x="{x - 4}" y="{y - 8}" width="154" height="{14 * len(labelled) + 4}" class="legend-box"/>']
    for item in labelled:
        dash = ' stroke-dasharray="5 3"' if item.dashed else ""
        parts.append(f'<line x1="{x}" x2="{x + 18}" y1="{y}" y2="{y}" stroke="{item.color}" stroke-width="2"{dash}/>'
                     f'<text x="{x + 22}" y="{y + 4}" class="legend">{text(item.label)}</text>')
        y += 14
    return "".join(parts)


def _empty_chart(width, height, message):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart empty" viewBox="0 0 {width} {height // 3}" '
            f'width="{width}" height="{height // 3}"><text x="{width // 2}" y="{height // 6}" class="tick" '
            f'text-anchor="middle">{text(message)}</text></svg>')
