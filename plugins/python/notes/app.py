"""`notes`: a toolhost plugin in Python. Keeps a checklist in its key-value store (bucket
`default`, kept by the host between calls, seen by no other plugin) and reads a JSON API with the
operator's `api_token` secret (the host adds the token; this code never sees it)."""

import dataclasses
import json
from typing import Optional, TypedDict

from toolhost_sdk import ToolError, http, kv, log, plugin, progress, tool

plugin(net="*", secret="api_token", kv="default")

# The key holding the checklist: a JSON array of {"text", "tags", "done"}.
NOTES = "notes"


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


def _notes(items):
    return [Note(i["text"], list(i.get("tags", [])), bool(i.get("done", False))) for i in items]


def _read():
    return _notes(kv.get_json(NOTES, default=[]))


def _change(fn):
    """Apply `fn` to the checklist (a list of Note, changed in place) atomically: when another
    call changes it meanwhile, `fn` runs again on the newer list. Returns the list stored."""
    def step(items):
        notes = _notes(items)
        fn(notes)
        return [dataclasses.asdict(n) for n in notes]

    return _notes(kv.update_json(NOTES, step, default=[]))


@tool(rest=True, category="notes")
def note(text: str) -> str:
    """Add a note to the checklist.

    Args:
        text: the note; commas are part of it, and words starting with `#` become tags
    """
    parsed = Note.parse("- [ ] " + text.strip())
    if parsed is None or not parsed.text:
        raise ToolError("the note is empty: give its text")
    notes = _change(lambda notes: notes.append(parsed))
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
    notes = _change(lambda notes: notes.extend(items))
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
    def mark(notes):
        if not 1 <= number <= len(notes):
            raise ToolError(f"there is no note #{number}; the checklist has {len(notes)} notes")
        if notes[number - 1].done:
            raise ToolError(f"note #{number} is already done")
        notes[number - 1].done = True

    notes = _change(mark)
    return f"#{number} done: {notes[number - 1].text}"


@tool(danger=True, category="notes")
def clear() -> str:
    """Delete the checklist with every note in it."""
    if not kv.exists(NOTES):
        raise ToolError("there are no notes to clear")
    count = len(_read())
    kv.delete(NOTES)
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
