"""Self-contained HTML reports of predictions (inline SVG figures, no network, no script)."""
from .html import render_html, write_html
from .model import ReportInput, Series

__all__ = ["ReportInput", "Series", "render_html", "write_html"]
