"""Tests for the notes tools under plain CPython:
`PYTHONPATH=../../../plugin-sdk/python python3 -m unittest` in this folder."""

import json
import unittest
from unittest import mock

from toolhost_sdk import ToolError, http, kv

import app


class Notes(unittest.TestCase):
    def setUp(self):
        # The host's key-value store, in memory: the bucket the plugin requests.
        self.store = kv.memory(["default"])
        self.addCleanup(self.store.uninstall)

    def test_note_add_show_done(self):
        self.assertEqual(app.note("buy milk, eggs #shop"), "noted as #1")
        self.assertEqual(app.add([app.Note("call Bob", ["phone"]), app.Note("old", [], True)]),
                         {"added": 2, "total": 3})
        self.assertEqual(app.show(), "1. [ ] buy milk, eggs #shop\n2. [ ] call Bob #phone\n3. [x] old")
        self.assertEqual(app.show("shop"), "1. [ ] buy milk, eggs #shop")
        self.assertEqual(app.done(2), "#2 done: call Bob")
        self.assertEqual(app.show(None, True), "1. [ ] buy milk, eggs #shop")
        self.assertEqual(json.loads(self.store.data["default"]["notes"]), [
            {"text": "buy milk, eggs", "tags": ["shop"], "done": False},
            {"text": "call Bob", "tags": ["phone"], "done": True},
            {"text": "old", "tags": [], "done": True},
        ])

    def test_errors(self):
        with self.assertRaisesRegex(ToolError, "there is no note #1; the checklist has 0 notes"):
            app.done(1)
        with self.assertRaisesRegex(ToolError, "the note is empty"):
            app.note("  ")
        with self.assertRaisesRegex(ToolError, "no notes to clear"):
            app.clear()
        app.note("x")
        with self.assertRaisesRegex(ToolError, "already done"):
            app.done(1) and app.done(1)
        self.assertEqual(app.clear(), "deleted 1 notes")
        self.assertEqual(self.store.data["default"], {})

    def test_a_change_made_meanwhile_is_kept(self):
        app.note("mine")
        real = app.kv.update_json
        raced = []

        def update_json(key, fn, default=None):
            def step(value):
                if not raced:  # another call adds a note while this one works
                    raced.append(1)
                    kv.set_json(key, value + [{"text": "theirs", "tags": [], "done": False}])
                return fn(value)
            return real(key, step, default=default)

        with mock.patch("toolhost_sdk.kv.update_json", update_json):
            self.assertEqual(app.note("later"), "noted as #3")
        self.assertEqual(app.show(), "1. [ ] mine\n2. [ ] theirs\n3. [ ] later")

    def test_the_store_refusing_is_an_error_for_the_model(self):
        self.store.uninstall()
        with kv.memory(denied=["default"]):
            with self.assertRaisesRegex(ToolError, r"bucket `default` is not granted.*--allow-kv notes=default"):
                app.show()

    def test_read_api_sends_the_token_as_a_secret_header(self):
        seen = []

        def fake(req):
            seen.append(req)
            return http.Response(200, req.url, [], b'{"items": [{"name": "a"}]}')

        with mock.patch("toolhost_sdk.http.send", fake):
            self.assertEqual(app.read_api("https://api.example.com/x", "/items/0/name"), '"a"')
            with self.assertRaisesRegex(ToolError, "nothing at JSON pointer"):
                app.read_api("https://api.example.com/x", "/nope")
        self.assertEqual(seen[0].secret_headers, [http.SecretHeader("authorization", "api_token", "Bearer ")])


if __name__ == "__main__":
    unittest.main()
