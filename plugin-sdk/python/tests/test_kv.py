"""`toolhost_sdk.kv` under plain CPython, against `kv.memory()`: the in-memory stand-in for the
host's `wasi:keyvalue` store, atomics and batch, shaped as componentize-py generates them. Every
method, the mapping of the host's errors to KvError, the `list-keys` cursor loop, and the
`kv` request of the manifest."""

import unittest

from support import ProjectCase

from toolhost_sdk import ToolError, kv
from toolhost_sdk import _spec


class Store(unittest.TestCase):
    def setUp(self):
        self.store = kv.memory(["default", "cache"], denied=["secret"], page_size=2)
        self.addCleanup(self.store.uninstall)
        self.b = kv.open("default")

    def ops(self, op):
        return [c for c in self.store.calls if c[0] == op]

    def test_get_set_delete_exists(self):
        self.assertIsNone(self.b.get("a"))
        self.assertFalse(self.b.exists("a"))
        self.b.set("a", b"\x00\xff")
        self.assertEqual(self.b.get("a"), b"\x00\xff")
        self.b.set("t", "héllo")  # str: stored as UTF-8
        self.assertEqual(self.store.data["default"]["t"], "héllo".encode())
        self.assertEqual(self.b.get_text("t"), "héllo")
        self.assertEqual(self.b.get_text("nope", "dflt"), "dflt")
        self.b.set("m", memoryview(b"mv"))
        self.assertEqual(self.b.get("m"), b"mv")
        self.assertTrue(self.b.exists("a"))
        self.assertIn("a", self.b)
        self.b.delete("a")
        self.b.delete("a")  # not there: nothing happens
        self.assertFalse(self.b.exists("a"))
        self.assertIsNone(self.b.get("a"))

    def test_json(self):
        self.assertEqual(self.b.get_json("prefs", default={"x": 0}), {"x": 0})
        self.assertIsNone(self.b.get_json("prefs"))
        self.b.set_json("prefs", {"dark": True, "name": "Zoë", "n": [1, 2]})
        self.assertEqual(self.store.data["default"]["prefs"], '{"dark":true,"name":"Zoë","n":[1,2]}'.encode())
        self.assertEqual(self.b.get_json("prefs"), {"dark": True, "name": "Zoë", "n": [1, 2]})
        self.b.set("bad", "{nope")
        with self.assertRaises(kv.KvError) as ctx:
            self.b.get_json("bad")
        self.assertEqual(ctx.exception.kind, "other")
        self.assertIn("kv: bucket `default`: the value of `bad` is not JSON", str(ctx.exception))

    def test_keys_follow_the_cursor_to_the_end(self):
        self.assertEqual(self.b.keys(), [])
        for k in "edcba":
            self.b.set(k, k)
        self.store.calls.clear()
        self.assertEqual(sorted(self.b.keys()), ["a", "b", "c", "d", "e"])
        # Pages of two: cursors none, "2", "4"; the third page's cursor is none.
        self.assertEqual([c[2] for c in self.ops("list-keys")], [None, "2", "4"])

    def test_keys_refuse_a_cursor_that_does_not_move(self):
        class Stuck:
            def list_keys(self, cursor):
                return self_store.KeyResponse(["k"], "same")

        self_store = self.store.store
        with self.assertRaisesRegex(kv.KvError, "same list-keys cursor twice"):
            kv.Bucket("default", Stuck()).keys()

    def test_increment(self):
        self.assertEqual(self.b.increment("n"), 1)
        self.assertEqual(self.b.increment("n", 41), 42)
        self.assertEqual(self.b.increment("n", -50), -8)
        self.assertEqual(self.b.get("n"), b"-8")  # a counter is decimal text
        self.b.set("c", b"10")
        self.assertEqual(self.b.increment("c"), 11)
        self.b.set("t", "ten")
        with self.assertRaises(kv.KvError) as ctx:
            self.b.increment("t")
        self.assertEqual(ctx.exception.kind, "other")
        self.assertIn("not a counter", ctx.exception.detail)
        with self.assertRaises(TypeError):
            self.b.increment("n", 1.5)
        with self.assertRaises(TypeError):
            self.b.increment("n", True)
        with self.assertRaises(ValueError):
            self.b.increment("n", 1 << 63)

    def test_batch(self):
        self.b.set_many({"a": b"1", "b": "2"})
        self.b.set_many([("c", "3")])
        self.assertEqual(len(self.ops("set-many")), 2)
        self.assertEqual(self.b.get_many(["a", "nope", "c", "b"]), {"a": b"1", "c": b"3", "b": b"2"})
        self.assertEqual(self.b.get_many([]), {})
        self.b.delete_many(["a", "nope", "b"])
        self.assertEqual(sorted(self.b.keys()), ["c"])
        with self.assertRaises(TypeError):
            self.b.get_many("ab")  # a string is not a list of keys

    def test_compare_and_swap(self):
        self.assertTrue(self.b.compare_and_swap("k", None, "v1"))  # None: the key is not there
        self.assertFalse(self.b.compare_and_swap("k", None, "v2"))
        self.assertFalse(self.b.compare_and_swap("k", b"other", "v2"))
        self.assertTrue(self.b.compare_and_swap("k", "v1", b"v2"))
        self.assertEqual(self.b.get("k"), b"v2")

    def test_compare_and_swap_loses_to_a_write_in_between(self):
        real_current = self.store.atomics.Cas.current

        def current(cas):
            value = real_current(cas)
            self.store.data["default"]["k"] = b"theirs"  # another call writes meanwhile
            self.store._bump("default", "k")
            return value

        self.b.set("k", "mine")
        self.store.atomics.Cas.current = current
        try:
            self.assertFalse(self.b.compare_and_swap("k", "mine", "new"))
        finally:
            self.store.atomics.Cas.current = real_current
        self.assertEqual(self.b.get("k"), b"theirs")

    def test_update_retries_on_the_newer_value(self):
        self.b.set("n", "1")
        seen = []

        def bump(current):
            seen.append(current)
            if len(seen) == 1:  # another call changes the key while this one computes
                self.store.data["default"]["n"] = b"10"
                self.store._bump("default", "n")
            return str(int(current) + 1)

        self.assertEqual(self.b.update("n", bump), b"11")
        self.assertEqual(seen, [b"1", b"10"])
        self.assertEqual(self.b.get("n"), b"11")
        self.assertEqual(self.b.update("n", lambda cur: None), b"11")  # None: left as it is
        self.assertEqual(self.b.update("new", lambda cur: "first" if cur is None else "again"), b"first")

    def test_update_gives_up_after_its_attempts(self):
        def always_changed(current):
            self.store._bump("default", "k")
            return "x"

        with self.assertRaises(kv.KvError) as ctx:
            self.b.update("k", always_changed, attempts=3)
        self.assertIn("`k` kept changing: gave up after 3 attempts", str(ctx.exception))
        self.assertIsNone(self.b.get("k"))

    def test_update_json(self):
        add = lambda items: items + ["milk"]  # noqa: E731
        self.assertEqual(self.b.update_json("todo", add, default=[]), ["milk"])
        self.assertEqual(self.b.update_json("todo", add, default=[]), ["milk", "milk"])
        self.assertEqual(self.b.get_json("todo"), ["milk", "milk"])
        # `default` is copied for each attempt: changing it in place does not leak.
        default = {"n": 0}

        def inc(d):
            d["n"] += 1
            return d

        self.b.update_json("d", inc, default=default)
        self.assertEqual(default, {"n": 0})
        self.assertEqual(self.b.update_json("d", lambda d: None), {"n": 1})

    def test_the_module_functions_use_the_default_bucket(self):
        kv.set("a", "1")
        self.assertEqual(kv.get("a"), b"1")
        self.assertEqual(kv.get_text("a"), "1")
        self.assertTrue(kv.exists("a"))
        self.assertEqual(kv.increment("a", 2), 3)
        kv.set_json("j", [1])
        self.assertEqual(kv.get_json("j"), [1])
        kv.set_many({"x": "y"})
        self.assertEqual(kv.get_many(["x"]), {"x": b"y"})
        kv.delete_many(["x"])
        self.assertTrue(kv.compare_and_swap("c", None, "1"))
        self.assertEqual(kv.update("c", lambda v: v + b"2"), b"12")
        self.assertEqual(kv.update_json("u", lambda v: v + 1, default=0), 1)
        kv.delete("j")
        self.assertEqual(sorted(kv.keys()), ["a", "c", "u"])
        self.assertEqual(set(self.store.data), {"default"})
        self.assertEqual(len(self.ops("open")), 1)  # opened once per instance

    def test_buckets_are_separate(self):
        cache = kv.open("cache")
        cache.set("a", "c")
        self.b.set("a", "d")
        self.assertEqual((cache.get("a"), self.b.get("a")), (b"c", b"d"))
        self.assertIs(kv.open("cache"), cache)

    def test_argument_types(self):
        with self.assertRaisesRegex(TypeError, "a key is a string"):
            self.b.get(b"a")
        with self.assertRaisesRegex(TypeError, "use set_json"):
            self.b.set("a", 1)
        with self.assertRaisesRegex(TypeError, "a bucket name is a string"):
            kv.open(None)


class Errors(unittest.TestCase):
    def setUp(self):
        self.store = kv.memory(["default"], denied=["secret"])
        self.addCleanup(self.store.uninstall)
        self.addCleanup(setattr, kv, "plugin_name", kv.plugin_name)

    def test_access_denied_names_the_bucket_and_the_grant(self):
        kv.plugin_name = "notes"
        with self.assertRaises(kv.KvError) as ctx:
            kv.open("secret")
        e = ctx.exception
        self.assertIsInstance(e, ToolError)  # uncaught, its message goes to the model
        self.assertEqual((e.kind, e.bucket), ("access-denied", "secret"))
        self.assertEqual(str(e), "kv: bucket `secret` is not granted to this plugin (access-denied): the operator "
                                 "grants it with `[plugin.notes] kv = [\"secret\"]` in the config or "
                                 "`--allow-kv notes=secret`")

    def test_the_plugin_name_falls_back_to_plugin_then_a_placeholder(self):
        kv.plugin_name = None
        saved = list(_spec._plugins)
        self.addCleanup(lambda: _spec._plugins.__setitem__(slice(None), saved))
        _spec._plugins[:] = []
        with self.assertRaisesRegex(kv.KvError, r"\[plugin.NAME\] kv = \[\"secret\"\].*--allow-kv NAME=secret"):
            kv.open("secret")
        _spec._plugins[:] = [({"name": "mine"}, "app.py", 1)]
        with self.assertRaisesRegex(kv.KvError, r"--allow-kv mine=secret"):
            kv.open("secret")

    def test_under_cpython_the_name_comes_from_pyproject_beside_the_module(self):
        import os
        import tempfile

        kv.plugin_name = None
        saved = list(_spec._plugins)
        self.addCleanup(lambda: _spec._plugins.__setitem__(slice(None), saved))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "pyproject.toml"), "w") as f:
                f.write('[project]\nname = "from-pyproject"\n')
            _spec._plugins[:] = [({}, os.path.join(d, "app.py"), 1)]
            with self.assertRaisesRegex(kv.KvError, r"--allow-kv from-pyproject=secret"):
                kv.open("secret")

    def test_the_component_entry_names_the_plugin(self):
        from toolhost_sdk import __main__ as cli

        src = cli.entry("app", "notes")
        self.assertTrue(src.endswith("toolhost_sdk.kv.plugin_name = 'notes'\n"), src[-200:])
        compile(src, "entry.py", "exec")

    def test_no_such_store(self):
        with self.assertRaises(kv.KvError) as ctx:
            kv.open("other")
        self.assertEqual(ctx.exception.kind, "no-such-store")
        self.assertIn("there is no bucket `other` for this plugin (no-such-store)", str(ctx.exception))
        self.assertIn('plugin(kv=["other"])', str(ctx.exception))

    def test_other_carries_the_host_text_for_every_operation(self):
        b = kv.open("default")
        b.set("n", "1")
        self.store.fail("the store is unavailable")
        ops = [lambda: b.get("k"), lambda: b.set("k", "v"), lambda: b.delete("k"), lambda: b.exists("k"),
               b.keys, lambda: b.increment("k"), lambda: b.get_many(["k"]), lambda: b.set_many({"k": "v"}),
               lambda: b.delete_many(["k"]), lambda: b.compare_and_swap("k", None, "v"),
               lambda: b.update("k", lambda v: "v"), lambda: kv.open("cache")]
        for op in ops:
            with self.assertRaises(kv.KvError) as ctx:
                op()
            self.assertEqual(ctx.exception.kind, "other")
            self.assertEqual(ctx.exception.detail, "the store is unavailable")
        self.assertEqual(str(ctx.exception), "kv: bucket `cache`: the store is unavailable")

    def test_a_store_error_at_swap_is_a_kv_error(self):
        b = kv.open("default")
        real_check = self.store.store.Bucket._check

        def fail_at_swap(bucket, op, detail=None):
            if op == "swap":
                self.store.fail("disk full")
            return real_check(bucket, op, detail)

        self.store.store.Bucket._check = fail_at_swap
        try:
            with self.assertRaisesRegex(kv.KvError, "kv: bucket `default`: disk full"):
                b.compare_and_swap("k", None, "v")
        finally:
            self.store.store.Bucket._check = real_check

    def test_without_a_host_or_a_stand_in(self):
        self.store.uninstall()
        saved = (kv._Err, kv._store, kv._atomics, kv._batch)
        kv._use(None, None, None, None)
        self.addCleanup(kv._use, *saved)
        with self.assertRaisesRegex(kv.KvError, r"not available under plain CPython.*kv.memory\(\)"):
            kv.open("default")

    def test_memory_as_a_context_manager_puts_the_previous_store_back(self):
        kv.open("default").set("a", "outer")
        with kv.memory() as inner:
            kv.open("anything").set("a", "inner")
            self.assertEqual(inner.data, {"anything": {"a": b"inner"}})
        self.assertEqual(kv.open("default").get("a"), b"outer")


class Manifest(ProjectCase):
    def test_kv_requests_are_written_only_when_made(self):
        self.app('''\
plugin(kv=["default", "cache.v2"])

@tool
def t() -> str:
    """T."""
    return ""
''')
        caps = self.manifest()["capabilities"]
        self.assertEqual(list(caps), ["fs", "env", "net", "secrets", "kv"])
        self.assertEqual(caps["kv"], ["default", "cache.v2"])
        self.app('''\
plugin(kv="default", exec="git")

@tool
def t() -> str:
    """T."""
    return ""
''')
        caps = self.manifest()["capabilities"]
        self.assertEqual(list(caps), ["fs", "env", "net", "secrets", "exec", "kv"])
        self.assertEqual(caps["kv"], ["default"])
        self.app('''\
plugin(kv=[])

@tool
def t() -> str:
    """T."""
    return ""
''')
        self.assertNotIn("kv", self.manifest()["capabilities"])

    def test_bad_bucket_names_at_the_plugin_line(self):
        self.app('''\
plugin(kv=["bad bucket", "", "-x", "x" * 65, "ok", "x" * 64, "é"])

@tool
def t() -> str:
    """T."""
    return ""
''')
        errs = self.errors()
        self.assertEqual(len(errs), 5, errs)
        for e in errs:
            self.assertTrue(e.startswith("app.py:4: `kv` entry "), e)
            self.assertTrue(e.endswith(" is not a bucket name (1–64 letters, digits, '_', '-' or '.', starting "
                                       "with a letter or digit)"), e)
        self.assertIn('"bad bucket"', errs[0])

    def test_kv_takes_strings(self):
        self.app('''\
plugin(kv=3)

@tool
def t() -> str:
    """T."""
    return ""
''')
        self.assertError("app.py:4", "`kv` takes a string or a list of strings")


if __name__ == "__main__":
    unittest.main()
