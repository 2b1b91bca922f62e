"""Server-side SVG bar charts (no JavaScript, no CDN). Pure: no Django import.

The markup is built from escaped text and numbers only, so it is safe to mark as HTML-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from html import escape


@dataclass(frozen=True)
class Bar:
    label: str
    value: Decimal
    tooltip: str = ""


def format_money(value: Decimal | int | float) -> str:
    """An amount as people read it: 2 decimals from 1 up (``1,234.50``); below 1, enough
    decimals for two significant digits, at least 2 (``0.50``, ``0.0021``, ``0.000042``), so
    a small cost never reads as ``0.00``."""
    value = value if isinstance(value, Decimal) else Decimal(str(value))
    if value == 0:
        return "0.00"
    if abs(value) >= 1:
        return f"{value:,.2f}"
    decimals = max(2, -value.adjusted() + 1)
    return f"{value:.{decimals}f}"


#: Width of one character of the charts' 11 px labels (a generous average, digits included).
CHAR_PX = 7


def _fmt(value: Decimal) -> str:
    return "0" if value == 0 else format_money(value)


def _text_px(text: str) -> int:
    return CHAR_PX * len(text)


def _scale(values: Sequence[Decimal]) -> Decimal:
    top = max((v for v in values), default=Decimal(0))
    return top if top > 0 else Decimal(1)


def column_chart(
    bars: Sequence[Bar], *, title: str, unit: str = "", width: int = 720, height: int = 240
) -> str:
    """Vertical bars, one per entry in order (e.g. one per day); labels thinned to fit."""
    top = _scale([b.value for b in bars])
    top_label = _fmt(top) + unit
    # The value axis's labels end 6 px left of the plot: room for the longest one.
    pad_left, pad_bottom, pad_top = max(56, _text_px(top_label) + 12), 36, 24
    plot_w, plot_h = width - pad_left - 8, height - pad_bottom - pad_top
    slot = plot_w / max(len(bars), 1)
    every = max(1, round(len(bars) / 10))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{pad_left}" y1="{pad_top + plot_h}" '
        f'x2="{width - 8}" y2="{pad_top + plot_h}"/>',
        f'<text class="tick" x="{pad_left - 6}" y="{pad_top + 4}" text-anchor="end">'
        f"{escape(top_label)}</text>",
        f'<text class="tick" x="{pad_left - 6}" y="{pad_top + plot_h}" text-anchor="end">0</text>',
    ]
    for i, bar in enumerate(bars):
        h = float(max(bar.value, Decimal(0)) / top) * plot_h
        x = pad_left + i * slot + slot * 0.1
        y = pad_top + plot_h - h
        tip = bar.tooltip or f"{bar.label}: {_fmt(bar.value)}{unit}"
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.8:.1f}" '
            f'height="{h:.1f}"><title>{escape(tip)}</title></rect>'
        )
        if i % every == 0:
            parts.append(
                f'<text class="label" x="{x + slot * 0.4:.1f}" y="{pad_top + plot_h + 16}" '
                f'text-anchor="middle">{escape(bar.label)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(
    bars: Sequence[Bar], *, title: str, unit: str = "", width: int = 720, row: int = 26
) -> str:
    """Horizontal bars, one row per entry (e.g. one per agent), value printed at the end."""
    top = _scale([b.value for b in bars])
    # The value printed after each bar: room for the longest one (+6 px gap, +4 margin).
    longest = max((_text_px(_fmt(b.value) + unit) for b in bars), default=0)
    label_w, value_w = 180, max(110, longest + 10)
    height = max(len(bars), 1) * row + 16
    plot_w = width - label_w - value_w
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for i, bar in enumerate(bars):
        y = 8 + i * row
        w = float(max(bar.value, Decimal(0)) / top) * plot_w
        tip = bar.tooltip or f"{bar.label}: {_fmt(bar.value)}{unit}"
        parts.append(
            f'<text class="label" x="{label_w - 8}" y="{y + row * 0.6:.1f}" '
            f'text-anchor="end">{escape(bar.label[:28])}</text>'
            f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{row - 8}">'
            f"<title>{escape(tip)}</title></rect>"
            f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + row * 0.6:.1f}">'
            f"{escape(_fmt(bar.value))}{escape(unit)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
