"""Named sources of real multilingual text for the per-script estimate (`script_report.py --corpora`).

Each corpus is one named package, read in place (nothing is copied into the repository):

- gettext catalogs (interface strings): the seven Debian packages of
  `script_report.CATALOG_PACKAGES`, and the wheels of four PyPI packages at pinned versions
  (``PYPI_WHEELS``: Django, Sphinx, Wagtail, django-allauth), fetched by ``pip download
  --no-deps`` into a cache directory (``CONTEXTFOLD_CORPORA_DIR``, by default
  ``<tempdir>/contextfold-corpora``) and read from the wheel (a zip) without unpacking it;
- manual pages (prose about commands): Debian's ``manpages-ja``, ``manpages-zh``,
  ``manpages-fr``, ``manpages-de``, ``manpages-ru``, ``manpages-pl``, their roff requests and
  font escapes stripped;
- a book: the Debian Reference (``debian-reference-ja``, ``-zh-cn``, ``-fr``, ``-de``), its HTML
  tags stripped, its command listings (``<pre>``), tables (package lists with popularity
  counts) and each chapter's table of contents left out;
- help pages: ``gnome-user-docs`` (the GNOME Help, Mallard XML, tags stripped; ``C`` is the
  English original).

Each document's text is cut into chunks of ``size`` characters; a chunk is kept when it is
written in the corpus's language (``in_script``: CJK at least 30% of the characters, Cyrillic
at least half the letters, French / German / Polish at least one accented letter per 200
characters), so option lists, code and untranslated English are left out. A corpus contributes
at most ``MAX_CHUNKS`` chunks, evenly spaced over its documents, so a large one does not decide
a language's pooled median alone.

Licenses (each package's ``copyright``): manpages-* GPL-2+/GPL-3+ and others per page,
debian-reference GPL-2+, gnome-user-docs CC-BY-SA-3.0, the catalog packages mostly GPL / LGPL;
Django, Wagtail and Sphinx BSD, django-allauth MIT.
"""

from __future__ import annotations

import gettext
import glob
import gzip
import html.parser
import io
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from script_report import CATALOG_PACKAGES, catalog_files  # noqa: E402

#: The languages read, by the locale name of the Debian catalogs.
LANGS = ("en", "fr", "de", "pl", "ru", "zh_CN", "ja", "ko")

#: PyPI wheels whose gettext catalogs are read: name -> (pinned version, license).
PYPI_WHEELS = {
    "django": ("5.2.19", "BSD-3-Clause"),
    "sphinx": ("9.0.4", "BSD-2-Clause"),
    "wagtail": ("8.0.1", "BSD-3-Clause"),
    "django-allauth": ("65.22.1", "MIT"),
}

#: Where a wheel names a locale otherwise.
WHEEL_LOCALES = {"zh_CN": ("zh_CN", "zh_Hans")}

#: Chunks per corpus and language, at most.
MAX_CHUNKS = 300


@dataclass(frozen=True)
class Corpus:
    """One named source of text in one language."""

    name: str  # the package, e.g. "manpages-pl", "django==5.2.19"
    kind: str  # "catalog", "man pages", "book", "help pages"
    lang: str
    license: str
    documents: Callable[[], Iterator[str]]

    def chunks(self, size: int = 3000, max_chunks: int = MAX_CHUNKS) -> list[str]:
        """The corpus's chunks of ``size`` characters written in its language, at most
        ``max_chunks`` of them, evenly spaced."""
        # Documents (a catalog's strings, a page) joined, then cut: most are shorter than a chunk.
        text = ("\n" if self.kind == "catalog" else "\n\n").join(self.documents())
        out = [text[i : i + size] for i in range(0, len(text) - size + 1, size)]
        out = [c for c in out if in_script(c, self.lang)]
        if len(out) > max_chunks:
            out = [out[i * len(out) // max_chunks] for i in range(max_chunks)]
        return out


def _is_cjk(ch: str) -> bool:
    return "\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af"


def in_script(text: str, lang: str) -> bool:
    """Whether ``text`` is written in ``lang`` (not an option list, code or untranslated English)."""
    if lang in ("zh_CN", "ja", "ko"):
        return sum(map(_is_cjk, text)) >= 0.3 * len(text)
    if lang == "ru":
        letters = [ch for ch in text if ch.isalpha()]
        return sum("\u0400" <= ch <= "\u04ff" for ch in letters) >= 0.5 * max(len(letters), 1)
    if lang in ("fr", "de", "pl"):
        return sum("\u00c0" <= ch <= "\u024f" and ch.isalpha() for ch in text) * 200 >= len(text)
    return sum(ch.isascii() for ch in text) >= 0.95 * len(text)


# -- gettext catalogs ---------------------------------------------------------------------------

def _catalog_strings(f: io.BufferedIOBase, lang: str) -> Iterator[str]:
    try:
        catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
    except (OSError, UnicodeDecodeError, ValueError):
        return
    for k, v in catalog.items():
        if not k:
            continue  # the catalog's header (translator, dates), not a message
        s = (k[0] if isinstance(k, tuple) else k) if lang == "en" else v
        if isinstance(s, str) and len(s) > 20:
            yield s


def debian_catalogs(lang: str) -> Iterator[str]:
    # English: the message ids of the Russian catalogs, as `script_report.catalog_texts` reads.
    for mo in catalog_files("ru" if lang == "en" else lang):
        with open(mo, "rb") as f:
            yield from _catalog_strings(f, lang)


def cache_dir() -> Path:
    d = Path(os.environ.get("CONTEXTFOLD_CORPORA_DIR") or Path(tempfile.gettempdir()) / "contextfold-corpora")
    d.mkdir(parents=True, exist_ok=True)
    return d


def wheel_path(name: str) -> Path | None:
    """The pinned wheel of ``name``, downloaded once into `cache_dir` (None when pip cannot)."""
    version = PYPI_WHEELS[name][0]
    d = cache_dir()
    stem = name.replace("-", "_").lower()

    def found() -> Path | None:
        hits = [p for p in d.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
        return hits[0] if hits else None

    if found() is None:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                        "-d", str(d), f"{name}=={version}"], check=False, capture_output=True)
    return found()


def wheel_catalogs(name: str, lang: str) -> Iterator[str]:
    whl = wheel_path(name)
    if whl is None:
        return
    locales = WHEEL_LOCALES.get(lang, (lang,))
    # English: the message ids of the Russian catalogs.
    want = ("ru",) if lang == "en" else locales
    with zipfile.ZipFile(whl) as z:
        for member in sorted(z.namelist()):
            parts = member.split("/")
            if member.endswith(".mo") and len(parts) >= 4 and parts[-3] in want and parts[-2] == "LC_MESSAGES":
                with z.open(member) as f:
                    yield from _catalog_strings(io.BytesIO(f.read()), lang)


# -- manual pages -------------------------------------------------------------------------------

MAN_DIRS = {"fr": "fr", "de": "de", "pl": "pl", "ru": "ru", "zh_CN": "zh_CN", "ja": "ja"}
_ROFF_REQUEST = re.compile(r"^[.'][A-Za-z]+\s*", re.M)
_ROFF_COMMENT = re.compile(r'^[.\']\s*\\".*$|\\".*$', re.M)
_ROFF_ESCAPE = re.compile(r"\\f(?:\[[^]]*\]|\(..|.)|\\\(..|\\\[[^]]*\]|\\[-&e|^~0c:%]|\\s[-+]?\d")
_ROFF_SPACE = re.compile(r"\\[ ~0]")


def strip_roff(raw: str) -> str:
    text = _ROFF_COMMENT.sub("", raw)
    text = _ROFF_REQUEST.sub("", text)
    text = _ROFF_SPACE.sub(" ", text)
    text = _ROFF_ESCAPE.sub("", text)
    return re.sub(r"\n{3,}", "\n\n", text)


def manpages(lang: str, package: str) -> Iterator[str]:
    """The pages ``package`` installs under ``/usr/share/man/<lang>`` (a page of another
    package there, e.g. apt's own translations, is left out)."""
    listed = Path(f"/var/lib/dpkg/info/{package}.list")
    if not listed.is_file():
        return
    root = f"/usr/share/man/{MAN_DIRS[lang]}/"
    for page in sorted(p for p in listed.read_text().split("\n") if p.startswith(root) and p.endswith(".gz")):
        if not Path(page).is_file() or Path(page).is_symlink():
            continue
        with gzip.open(page) as f:
            raw = f.read().decode("utf-8", "ignore")
        if raw.startswith(".so "):
            continue
        yield strip_roff(raw)


# -- HTML and Mallard ---------------------------------------------------------------------------

class _Text(html.parser.HTMLParser):
    """The text of an XHTML / XML document, without the content of ``skip`` elements or of
    elements whose class is in ``skip_classes`` (both formats read are well formed, so an
    element's end is found by counting tags)."""

    def __init__(self, skip: tuple[str, ...], skip_classes: tuple[str, ...]) -> None:
        super().__init__(convert_charrefs=True)
        self.skip, self.skip_classes, self.depth, self.parts = skip, skip_classes, 0, []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += 1
        elif tag in self.skip or dict(attrs).get("class") in self.skip_classes:
            self.depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1
        elif tag in ("p", "div", "li", "tr", "title", "h1", "h2", "h3", "dt", "dd", "section", "item"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.depth:
            self.parts.append(data)


def strip_markup(doc: str, skip: tuple[str, ...] = ("pre", "script", "style", "screen", "table", "info"),
                 skip_classes: tuple[str, ...] = ("toc", "navheader", "navfooter")) -> str:
    """The text of ``doc``: command listings (``pre``, Mallard's ``screen``), tables, Mallard's
    ``info`` (credits, links) and a book's tables of contents and navigation left out."""
    p = _Text(skip, skip_classes)
    p.feed(doc)
    text = "".join(p.parts)
    text = re.sub(r"[ \t]+", " ", text)
    return re.sub(r"\s*\n\s*", "\n", text).strip()


REFERENCE_LANGS = {"ja": "ja", "zh_CN": "zh-cn", "fr": "fr", "de": "de"}


def debian_reference(lang: str) -> Iterator[str]:
    for page in sorted(glob.glob(f"/usr/share/debian-reference/*.{REFERENCE_LANGS[lang]}.html")):
        yield strip_markup(Path(page).read_text(encoding="utf-8", errors="ignore"))


def gnome_help(lang: str) -> Iterator[str]:
    for page in sorted(glob.glob(f"/usr/share/help/{'C' if lang == 'en' else lang}/gnome-help/*.page")):
        yield strip_markup(Path(page).read_text(encoding="utf-8", errors="ignore"))


# -- the corpora --------------------------------------------------------------------------------

def corpora(langs: tuple[str, ...] = LANGS) -> list[Corpus]:
    """Every named corpus, per language (a corpus whose package is not installed yields no
    chunk)."""
    out: list[Corpus] = []
    for lang in langs:
        out.append(Corpus("Debian catalogs (7 packages)", "catalog", lang, "GPL / LGPL",
                          lambda lang=lang: debian_catalogs(lang)))
        for name, (version, lic) in PYPI_WHEELS.items():
            out.append(Corpus(f"{name}=={version}", "catalog", lang, lic,
                              lambda name=name, lang=lang: wheel_catalogs(name, lang)))
        if lang in MAN_DIRS:
            pkg = f"manpages-{'zh' if lang == 'zh_CN' else lang}"
            out.append(Corpus(pkg, "man pages", lang, "GPL and others, per page",
                              lambda lang=lang, pkg=pkg: manpages(lang, pkg)))
        if lang in REFERENCE_LANGS:
            out.append(Corpus(f"debian-reference-{REFERENCE_LANGS[lang]}", "book", lang, "GPL-2+",
                              lambda lang=lang: debian_reference(lang)))
        out.append(Corpus("gnome-user-docs", "help pages", lang, "CC-BY-SA-3.0",
                          lambda lang=lang: gnome_help(lang)))
    return out


#: The Debian packages the corpora read (``apt-get install`` them; the catalog packages are
#: `script_report.CATALOG_PACKAGES`).
DEBIAN_PACKAGES = ("manpages-ja", "manpages-zh", "manpages-fr", "manpages-de", "manpages-ru", "manpages-pl",
                   "debian-reference-ja", "debian-reference-zh-cn", "debian-reference-fr", "debian-reference-de",
                   "gnome-user-docs", *CATALOG_PACKAGES)
