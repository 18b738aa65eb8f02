"""Text by script: the sampled estimate against exact o200k / cl100k counts, per script.

    python tools/script_report.py [--size 3000] [--manpages]

Source of real multilingual text: the gettext catalogs (``.mo``) of seven named Debian
packages (``CATALOG_PACKAGES``: glib, gtk 3, xkb-data, iso-codes, shared-mime-info, apt; real
human translations of the same English messages, each under its package's license, GPL or
LGPL for most; read in place under ``/usr/share/locale``, nothing copied into the repository).
Each script's texts are the translations of its locale's catalogs (English: the message ids),
joined into chunks of ``--size`` characters. A named list and not every installed catalog:
the corpus was whatever else the machine had installed, so a median moved with it (Arabic on
o200k: +0.1% on a machine with many packages, -5.3% on a fresh one without chromium's
dependencies). ``.ci/run`` installs the seven. ``--all-catalogs`` reads every installed
catalog instead (the corpus the text weights were fitted on, `tools/fit_text_weights.py`).
``--locale-tree DIR`` reads every catalog under ``DIR/**/locale/`` instead: a second corpus the
weights were not fitted on, e.g. Django's (``pip download --no-deps django==5.2.8``, unzip the
wheel into DIR; BSD-3-Clause). Code: the Python standard library's sources. Emoji: English messages
with one emoji from Unicode's emoji blocks after every few words (no real corpus of emoji chat
is installed; the mix is stated as built).

``--manpages``: a second source, prose rather than interface strings: the manual pages Debian's
``manpages-zh`` and ``manpages-ja`` install (``apt-get install manpages-zh manpages-ja``), their
roff requests and font escapes stripped, cut into chunks of ``--size`` characters, each kept
when at least 30% of it is CJK (the rest of a page is option names and code).

``--corpora``: the named corpora of `tools/script_corpora.py` (gettext catalogs of Debian
packages and of pinned PyPI wheels, Debian's translated manual pages, the Debian Reference, the
GNOME Help; English, French, German, Polish, Russian, Chinese, Japanese, Korean), one row per
corpus and language, then each language's chunks pooled over its corpora.

Prints per script and encoding the number of chunks and the median / p10 / p90 of
``estimate / exact - 1`` of the text alone (a one-message request minus the empty one), with
``gpt-4o`` (o200k_base) and ``gpt-4`` (cl100k_base).
"""

from __future__ import annotations

import argparse
import gettext
import glob
import gzip
import re
import statistics
import sys
import sysconfig
from pathlib import Path

import contextfold as cf

LOCALES = {"Latin prose (en)": "en", "Latin prose (fr)": "fr", "Latin prose (de)": "de", "Latin prose (pl)": "pl",
           "Chinese": "zh_CN",
           "Japanese": "ja", "Korean": "ko", "Cyrillic (ru)": "ru", "Arabic": "ar"}
MODELS = {"o200k": "gpt-4o", "cl100k": "gpt-4"}


def _chunks(parts: list[str], size: int) -> list[str]:
    out, chunk = [], ""
    for s in parts:
        chunk += s + "\n"
        if len(chunk) >= size:
            out.append(chunk)
            chunk = ""
    return out


#: Debian package -> the gettext domains it installs (``dpkg -L``, Debian 12): every domain of
#: each, whichever languages it covers. ``.ci/run`` installs these packages.
CATALOG_PACKAGES: dict[str, tuple[str, ...]] = {
    "libglib2.0-data": ("glib20",),
    "libgtk-3-common": ("gtk30", "gtk30-properties"),
    "xkb-data": ("xkeyboard-config",),
    "iso-codes": ("iso_15924", "iso_3166-1", "iso_3166-2", "iso_3166-3", "iso_4217", "iso_639-2", "iso_639-3",
                  "iso_639-5"),
    "shared-mime-info": ("shared-mime-info",),
    "apt": ("apt",),
    "libapt-pkg6.0": ("libapt-pkg6.0",),
}


#: Where a locale tree names a locale otherwise (Django: ``zh_Hans``).
LOCALE_ALIASES = {"zh_CN": ("zh_CN", "zh_Hans")}

def catalog_files(locale: str, every: bool = False, tree: Path | None = None) -> list[str]:
    """The ``.mo`` files of ``locale`` that exist: those of ``CATALOG_PACKAGES``, or with
    ``every`` all that are installed; with ``tree`` (``--locale-tree``), every catalog of the locale in
    that tree (``**/locale/<locale>/LC_MESSAGES/*.mo``)."""
    if tree is not None:
        return sorted(str(p) for name in LOCALE_ALIASES.get(locale, (locale,))
                      for p in tree.glob(f"**/locale/{name}/LC_MESSAGES/*.mo"))
    if every:
        return sorted(glob.glob(f"/usr/share/locale/{locale}/LC_MESSAGES/*.mo"))
    names = (f"/usr/share/locale/{locale}/LC_MESSAGES/{d}.mo" for ds in CATALOG_PACKAGES.values() for d in ds)
    return [p for p in names if Path(p).is_file()]


def catalog_texts(lang: str, size: int, every: bool = False, tree: Path | None = None) -> list[str]:
    """Translations of the catalogs of ``lang`` (``en``: the message ids), those of
    ``CATALOG_PACKAGES`` or with ``every`` all installed, in chunks of ``size`` characters."""
    locale = "ru" if lang == "en" else lang
    parts: list[str] = []
    for mo in catalog_files(locale, every, tree):
        try:
            with open(mo, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        for k, v in catalog.items():
            s = (k[0] if isinstance(k, tuple) else k) if lang == "en" else v
            if isinstance(s, str) and len(s) > 20:
                parts.append(s)
    return _chunks(parts, size)


def code_texts(size: int) -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    out: list[str] = []
    for p in sorted(stdlib.glob("*.py"))[:200]:
        text = p.read_text(encoding="utf-8", errors="replace")
        out.extend(text[i : i + size] for i in range(0, min(len(text), 4 * size), size))
    return out


#: Manual pages read by ``--manpages``: script name -> the directory Debian installs them in.
MANPAGES = {"Chinese (man pages)": "/usr/share/man/zh_CN", "Japanese (man pages)": "/usr/share/man/ja"}


def manpage_texts(root: str, size: int) -> list[str]:
    """Chunks of the manual pages under ``root`` whose characters are at least 30% CJK."""
    out: list[str] = []
    for page in sorted(glob.glob(f"{root}/man*/*.gz")):
        with gzip.open(page) as f:
            raw = f.read().decode("utf-8", "ignore")
        lines = [re.sub(r"^[.'][A-Za-z]+\s*", "", ln) for ln in raw.splitlines()]
        text = re.sub(r"\\f[BIRP]|\\\(..|\\-|\\&|\\e", "", "\n".join(lines))
        for i in range(0, len(text) - size, size):
            c = text[i : i + size]
            if sum(1 for ch in c if "\u3040" <= ch <= "\u9fff") >= 0.3 * len(c):
                out.append(c)
    return out


def emoji_texts(size: int, every: bool = False, tree: Path | None = None) -> list[str]:
    emoji = [chr(c) for c in range(0x1F600, 0x1F650)] + [chr(c) for c in range(0x1F680, 0x1F6C0)]
    out = []
    for j, t in enumerate(catalog_texts("en", size, every, tree)):
        words = t.split(" ")
        out.append(" ".join(w + (emoji[(i + j) % len(emoji)] if i % 4 == 3 else "") for i, w in enumerate(words)))
    return out


def errors(model: str, texts: list[str]) -> list[float]:
    empty = [{"role": "user", "content": ""}]
    e0, c0 = cf.estimate(empty, model=model), cf.count(empty, model=model)
    out = []
    for t in texts:
        m = [{"role": "user", "content": t}]
        exact = cf.count(m, model=model) - c0
        if exact > 0:
            out.append((cf.estimate(m, model=model) - e0) / exact - 1)
    return out


def _cell(e: list[float]) -> str:
    e = sorted(e)
    return f"{statistics.median(e):+.1%} ({e[len(e) // 10]:+.1%} / {e[9 * len(e) // 10]:+.1%})"


def corpora_report(size: int) -> None:
    """Per corpus and language, then pooled per language (`tools/script_corpora.py`)."""
    from script_corpora import corpora

    pooled: dict[str, dict[str, list[float]]] = {}
    print("| language | corpus | kind | n | " + " | ".join(f"{e} median (p10 / p90)" for e in MODELS) + " |")
    print("| --- | --- | --- | ---: | " + " | ".join("---:" for _ in MODELS) + " |")
    for c in corpora():
        texts = c.chunks(size)
        if not texts:
            continue
        cells = []
        for enc, model in MODELS.items():
            e = errors(model, texts)
            pooled.setdefault(c.lang, {}).setdefault(enc, []).extend(e)
            cells.append(_cell(e))
        print(f"| {c.lang} | {c.name} | {c.kind} | {len(texts)} | " + " | ".join(cells) + " |")
    print("\n| language (pooled) | n | " + " | ".join(f"{e} median (p10 / p90)" for e in MODELS) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in MODELS) + " |")
    for lang, by_enc in pooled.items():
        print(f"| {lang} | {len(by_enc['o200k'])} | " + " | ".join(_cell(by_enc[enc]) for enc in MODELS) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=3000)
    ap.add_argument("--manpages", action="store_true", help="Chinese and Japanese manual pages instead")
    ap.add_argument("--all-catalogs", action="store_true", help="every installed catalog, not CATALOG_PACKAGES'")
    ap.add_argument("--locale-tree", type=Path, help="read the catalogs of this tree instead (an unpacked wheel)")
    ap.add_argument("--corpora", action="store_true", help="every named corpus of tools/script_corpora.py instead")
    args = ap.parse_args()
    if args.corpora:
        corpora_report(args.size)
        return
    if args.manpages:
        corpora = {name: manpage_texts(root, args.size) for name, root in MANPAGES.items()}
    else:
        corpora = {name: catalog_texts(lang, args.size, args.all_catalogs, args.locale_tree) for name, lang in LOCALES.items()}
        corpora["Code (Python stdlib)"] = code_texts(args.size)
        corpora["Emoji (in English)"] = emoji_texts(args.size, args.all_catalogs, args.locale_tree)
    print("| script | n | " + " | ".join(f"{e} median (p10 / p90)" for e in MODELS) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in MODELS) + " |")
    for name, texts in corpora.items():
        if not texts:
            print(f"| {name} | 0 | " + " | ".join("n/a" for _ in MODELS) + " |", file=sys.stdout)
            continue
        cells = []
        for model in MODELS.values():
            e = sorted(errors(model, texts))
            cells.append(f"{statistics.median(e):+.1%} ({e[len(e) // 10]:+.1%} / {e[9 * len(e) // 10]:+.1%})")
        print(f"| {name} | {len(texts)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
