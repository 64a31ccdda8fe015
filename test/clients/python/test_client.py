"""The Python SDK's client (mcp, stdio_client + ClientSession) against the
nanosandbox-mcp binary, in both protocol eras: initialize() speaks the
2025-11-25 handshake, discover() the sessionless 2026-07-28 one.

Run with NSB_BIN set to the binary: python -m unittest -v test_client
"""

import os
import shutil
import tempfile
import unittest
from contextlib import asynccontextmanager

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
SERVER = os.environ.get("NSB_BIN", "")


class Base(unittest.IsolatedAsyncioTestCase):
    era = LEGACY
    flags: list[str] = []

    @asynccontextmanager
    async def connect(self):
        """Starts the server and opens a session in the era. The session
        lives within one task, as anyio requires."""
        if not SERVER:
            self.fail("set NSB_BIN to the nanosandbox-mcp binary")
        ws = tempfile.mkdtemp(prefix="nsb-python-")
        self.addCleanup(shutil.rmtree, ws, True)
        self.ws = ws
        params = StdioServerParameters(command=SERVER, args=["--workspace", ws, *self.flags])
        with tempfile.TemporaryFile(mode="w+") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    if self.era == LEGACY:
                        result = await session.initialize()
                        self.assertEqual(result.protocol_version, LEGACY)
                    else:
                        result = await session.discover()
                        self.assertIn(MODERN, result.supported_versions)
                    self.assertEqual(session.protocol_version, self.era)
                    self.session = session
                    yield session

    async def call(self, **arguments):
        return await self.session.call_tool("run_command", arguments)

    def text(self, result):
        texts = [c.text for c in result.content if c.type == "text"]
        self.assertEqual(len(texts), 1, result.content)
        return texts[0]

    def assertRan(self, result, code):
        self.assertFalse(result.is_error, self.text(result))
        sc = result.structured_content
        self.assertIsNotNone(sc)
        self.assertEqual(sc["exit_code"], code)
        self.assertFalse(sc["timed_out"])
        self.assertTrue(self.text(result).startswith(f"exit status {code}"), self.text(result))
        return sc


class Calls:
    """The tests both eras share (a mixin, so unittest does not run it alone)."""

    async def test_list(self):
        async with self.connect():
            tools = (await self.session.list_tools()).tools
            self.assertEqual([t.name for t in tools], ["run_command"])
            schema = tools[0].input_schema
            self.assertEqual(sorted(schema["properties"]), ["args", "command", "stdin"])
            self.assertIs(schema["additionalProperties"], False)
            self.assertEqual(schema["required"], ["command"])

    async def test_call(self):
        async with self.connect():
            sc = self.assertRan(await self.call(command="sh", args=["-c", "echo from python; echo err >&2; exit 5"]), 5)
            self.assertEqual(sc["stdout"], "from python\n")
            self.assertEqual(sc["stderr"], "err\n")

    async def test_stdin(self):
        async with self.connect():
            sc = self.assertRan(await self.call(command="cat", stdin="é\n"), 0)
            self.assertEqual(sc["stdout"], "é\n")

    async def test_extra_argument_refused(self):
        async with self.connect():
            marker = os.path.join(self.ws, "ran")
            result = await self.call(command="touch", args=[marker], cwd="/")
            self.assertTrue(result.is_error, result)
            self.assertIn("cwd", self.text(result))
            self.assertFalse(os.path.exists(marker), "the refused command ran")
            self.assertRan(await self.call(command="true"), 0)


class LegacyCalls(Calls, Base):
    era = LEGACY


class ModernCalls(Calls, Base):
    era = MODERN


class Timeout:
    flags = ["--timeout", "2s"]

    async def test_timeout(self):
        async with self.connect():
            result = await self.call(command="sh", args=["-c", "echo partial; while :; do sleep 0.2; done"])
            self.assertTrue(result.is_error, result)
            self.assertEqual(self.text(result).split()[0], "timed")
            sc = result.structured_content
            self.assertTrue(sc["timed_out"])
            self.assertEqual(sc["stdout"], "partial\n")
            self.assertGreaterEqual(sc["duration_ms"], 2000)
            self.assertRan(await self.call(command="true"), 0)


class LegacyTimeout(Timeout, Base):
    era = LEGACY


class ModernTimeout(Timeout, Base):
    era = MODERN


if __name__ == "__main__":
    unittest.main(verbosity=2)
