"""`toolhost_sdk.progress` under plain CPython: a line on stderr, never a failure."""

import contextlib
import io
import unittest

import toolhost_sdk


class ProgressTest(unittest.TestCase):
    def test_reports_go_to_stderr_outside_the_host(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            toolhost_sdk.progress(3, 10, "hashing")
            toolhost_sdk.progress(4)
            toolhost_sdk.progress(-1, None, "")
        self.assertEqual(err.getvalue().splitlines(), ["[progress] 3/10 hashing", "[progress] 4", "[progress] 0"])

    def test_it_is_exported(self):
        self.assertIn("progress", toolhost_sdk.__all__)


if __name__ == "__main__":
    unittest.main()
