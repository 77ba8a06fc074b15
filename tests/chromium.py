"""Headless Chromium for the report tests: a page's dumped DOM, its charts and sections."""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # every host name fails to resolve: the page must not need the network
    "--host-resolver-rules=MAP * ~NOTFOUND",
)


class Charts(HTMLParser):
    """The charts (each svg's attributes by its data-chart), the body's attributes and the page
    title of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, dict[str, str]] = {}
        self.body: dict[str, str] = {}
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        if tag == "svg" and "data-chart" in values:
            self.charts[values["data-chart"]] = values
        elif tag == "body":
            self.body = values
        self._in_title = tag == "title" and not self.title and not self.charts

    def handle_data(self, text: str) -> None:
        if self._in_title:
            self.title += text

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False


def chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Chromium run headless on the page with its own profile folder and the given flags."""
    command = [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def console_messages(stderr: str) -> list[str]:
    """Lines Chromium logs for console output and uncaught errors (all at INFO level)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (Debian package `chromium`)"
)


class Sections(HTMLParser):
    """The rendered text of each <section id=...> of a dumped DOM, and the body's attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.text: dict[str, list[str]] = {}
        self.body: dict[str, str] = {}
        self._current: str | None = None
        self._skip = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        if tag == "section":
            self._current = values.get("id")
            self.text[self._current or ""] = []
        elif tag == "body":
            self.body = values
        self._skip = tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self._current = None
        self._skip = False

    def handle_data(self, text: str) -> None:
        if self._current and not self._skip and text.strip():
            self.text[self._current].append(text.strip())
