"""Tests for the notes tools under plain CPython:
`PYTHONPATH=../../../plugin-sdk/python python3 -m unittest` in this folder."""

import os
import tempfile
import unittest
from unittest import mock

from toolhost_sdk import ToolError, http

import app


class Notes(unittest.TestCase):
    def setUp(self):
        self._old = os.getcwd()
        self._tmp = tempfile.TemporaryDirectory()
        os.chdir(self._tmp.name)  # the workspace is the plugin's current directory

    def tearDown(self):
        os.chdir(self._old)
        self._tmp.cleanup()

    def test_note_add_show_done(self):
        self.assertEqual(app.note("buy milk, eggs #shop"), "noted as #1")
        self.assertEqual(app.add([app.Note("call Bob", ["phone"]), app.Note("old", [], True)]),
                         {"added": 2, "total": 3})
        self.assertEqual(app.show(), "1. [ ] buy milk, eggs #shop\n2. [ ] call Bob #phone\n3. [x] old")
        self.assertEqual(app.show("shop"), "1. [ ] buy milk, eggs #shop")
        self.assertEqual(app.done(2), "#2 done: call Bob")
        self.assertEqual(app.show(None, True), "1. [ ] buy milk, eggs #shop")
        with open("notes.md") as f:
            self.assertEqual(f.read(), "- [ ] buy milk, eggs #shop\n- [x] call Bob #phone\n- [x] old\n")

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
