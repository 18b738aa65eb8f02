"""Text from the data, made safe for a terminal: never read as rich markup (a message saying
``[/etc/nginx/nginx.conf]`` is text), control characters and escape sequences replaced."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

# C0 controls but tab and newline, DEL, C1 controls: what a terminal would act on.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: object) -> str:
    """``text`` with control characters (the ESC of an escape sequence included) replaced by
    U+FFFD, so data can neither move the cursor nor recolour the screen."""
    return _CONTROLS.sub("\ufffd", str(text))


def plain(text: object) -> Text:
    """``text`` cleaned, as a rich ``Text`` (a table cell rich never parses as markup)."""
    from rich.text import Text

    return Text(clean(text))
