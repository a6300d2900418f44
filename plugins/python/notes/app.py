"""`notes`: a toolhost plugin in Python. Keeps a checklist in `notes.md` in the workspace and
reads a JSON API with the operator's `api_token` secret (the host adds the token; this code
never sees it)."""

import dataclasses
import json
import os
from typing import Optional, TypedDict

from toolhost_sdk import ToolError, http, log, plugin, progress, tool

plugin(fs="workspace:rw", net="*", secret="api_token")

NOTES = "notes.md"


@dataclasses.dataclass
class Note:
    text: str
    tags: list[str] = dataclasses.field(default_factory=list)
    done: bool = False

    def line(self):
        tags = "".join(f" #{t}" for t in self.tags)
        return f"- [{'x' if self.done else ' '}] {self.text}{tags}"

    @staticmethod
    def parse(line):
        """A Note from a `- [ ] text #tag` line, or None for any other line."""
        if not (line.startswith("- [ ] ") or line.startswith("- [x] ")):
            return None
        words = line[6:].split(" ")
        tags = [w[1:] for w in words if w.startswith("#") and len(w) > 1]
        text = " ".join(w for w in words if not (w.startswith("#") and len(w) > 1))
        return Note(text, tags, line[3] == "x")


def _read():
    try:
        with open(NOTES, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    return [n for n in map(Note.parse, lines) if n is not None]


def _write(notes):
    with open(NOTES + ".tmp", "w", encoding="utf-8") as f:
        f.write("".join(n.line() + "\n" for n in notes))
    os.replace(NOTES + ".tmp", NOTES)


@tool(rest=True, category="notes")
def note(text: str) -> str:
    """Add a note to the checklist in notes.md.

    Args:
        text: the note; commas are part of it, and words starting with `#` become tags
    """
    parsed = Note.parse("- [ ] " + text.strip())
    if parsed is None or not parsed.text:
        raise ToolError("the note is empty: give its text")
    notes = _read()
    notes.append(parsed)
    _write(notes)
    log.info(f"note {len(notes)} added")
    return f"noted as #{len(notes)}"


class Added(TypedDict):
    """What `add` answers: its return annotation is the tool's outputSchema."""

    added: int
    total: int


@tool(category="notes")
def add(items: list[Note]) -> Added:
    """Add several notes at once, each with its tags and done flag.

    Args:
        items: JSON array of {"text": string, "tags"?: [string], "done"?: bool}
    """
    if not items:
        raise ToolError("`items` is empty: give at least one note")
    for i, n in enumerate(items, 1):
        if not n.text.strip():
            raise ToolError("a note has an empty `text`")
        # How far the check has come, for whoever waits (a long list takes a while).
        progress(i, len(items), f"checked {i} of {len(items)} notes")
    notes = _read() + items
    _write(notes)
    return {"added": len(items), "total": len(notes)}


@tool(read_only=True, category="notes")
def show(tag: Optional[str] = None, open_only: bool = False) -> str:
    """Show the checklist, numbered, optionally only notes with a tag or only open ones.

    Args:
        tag: only notes with this tag (without `#`)
        open_only: true to leave out done notes
    """
    tag = (tag or "").lstrip("#")
    rows = [
        f"{i}. {n.line()[2:]}"
        for i, n in enumerate(_read(), 1)
        if (not tag or tag in n.tags) and not (open_only and n.done)
    ]
    if not rows:
        return "no notes" + (f" tagged #{tag}" if tag else "")
    return "\n".join(rows)


@tool(category="notes")
def done(number: int) -> str:
    """Mark a note as done, by its number in `show`.

    Args:
        number: the note's number (1 is the first)
    """
    notes = _read()
    if not 1 <= number <= len(notes):
        raise ToolError(f"there is no note #{number}; the checklist has {len(notes)} notes")
    if notes[number - 1].done:
        raise ToolError(f"note #{number} is already done")
    notes[number - 1].done = True
    _write(notes)
    return f"#{number} done: {notes[number - 1].text}"


@tool(danger=True, category="notes")
def clear() -> str:
    """Delete notes.md with every note in it."""
    count = len(_read())
    try:
        os.remove(NOTES)
    except FileNotFoundError:
        raise ToolError("there are no notes to clear") from None
    return f"deleted {count} notes"


def _select(value, pointer):
    """The part of `value` at JSON pointer `pointer` (RFC 6901)."""
    if not pointer:
        return value
    if not pointer.startswith("/"):
        raise ToolError(f"{pointer!r} is not a JSON pointer: it starts with `/`, e.g. /items/0/name")
    for raw in pointer[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            raise ToolError(f"nothing at JSON pointer {pointer!r}")
    return value


@tool(read_only=True, output_limit=20000, category="web")
def read_api(url: str, pointer: Optional[str] = None) -> str:
    """GET a JSON API with the operator's `api_token` secret sent as a bearer token (the host
    adds the token; the plugin never sees it).

    Args:
        url: an API URL the operator allows for the token
        pointer: a JSON pointer into the answer, such as /items/0/name
    """
    resp = http.get(
        url,
        headers={"accept": "application/json"},
        secret_headers=[http.SecretHeader("authorization", "api_token", "Bearer ")],
    ).raise_for_status()
    return json.dumps(_select(resp.json(), pointer), indent=2, ensure_ascii=False)
