"""Text by script: the estimate against exact o200k / cl100k counts on real translations (the
gettext catalogs Debian packages install; `tools/script_report.py` prints the whole table)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from script_report import catalog_texts, emoji_texts, errors  # noqa: E402

SCRIPTS = {"Chinese": "zh_CN", "Japanese": "ja", "Korean": "ko", "Cyrillic": "ru", "Arabic": "ar"}


def _texts(lang: str) -> list[str]:
    texts = emoji_texts(3000) if lang == "emoji" else catalog_texts(lang, 3000)
    if len(texts) < 10:
        pytest.skip(f"fewer than 10 chunks of installed {lang} translations under /usr/share/locale")
    return texts[:: max(1, len(texts) // 40)]


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
@pytest.mark.parametrize("lang", [*SCRIPTS.values(), "emoji"])
def test_median_error_per_script_is_within_five_percent(lang: str, model: str) -> None:
    e = errors(model, _texts(lang))
    assert abs(statistics.median(e)) <= 0.05, (lang, model, statistics.median(e))


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
@pytest.mark.parametrize("lang", ["zh_CN", "ja", "ko"])
def test_cjk_is_never_priced_far_under_on_the_median(lang: str, model: str) -> None:
    assert statistics.median(errors(model, _texts(lang))) > -0.10
