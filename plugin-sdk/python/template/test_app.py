"""Tests for the tools, run under plain CPython: `python3 -m unittest` in this folder (with the
toolhost SDK on PYTHONPATH; `toolhost build` does the same before it builds)."""

import unittest

from toolhost_sdk import ToolError

from app import count_words


class CountWords(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(count_words("one two\nthree"), {"words": 3, "lines": 2, "chars": 13})

    def test_empty_text_is_an_error(self):
        with self.assertRaises(ToolError):
            count_words("  ")


if __name__ == "__main__":
    unittest.main()
