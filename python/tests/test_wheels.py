"""Tests of build_wheels.py and check_wheels.py on a fake GoReleaser dist."""

import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import build_wheels  # noqa: E402
import check_wheels  # noqa: E402

LINUX_X86_64 = "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64"
LINUX_AARCH64 = "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64"


def fake_elf(machine, interp=False):
    """A minimal 64-bit little-endian ELF executable header with its program headers."""
    phdrs = [1] + ([3] if interp else [])  # PT_LOAD, PT_INTERP
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0x401000, 64, 0, 0, 64, 56, len(phdrs), 64, 0, 0)
    for p in phdrs:
        header += struct.pack("<IIQQQQQQ", p, 5, 0, 0x400000, 0x400000, 0, 0, 0x1000)
    return header + b"\0" * 256


def fake_macho(cputype):
    return struct.pack("<IIIIIII", 0xFEEDFACF, cputype, 0, 2, 0, 0, 0) + bytes(4) + b"\0" * 256


BINARIES = {
    ("linux", "amd64"): fake_elf(62),
    ("linux", "arm64"): fake_elf(183),
    ("darwin", "amd64"): fake_macho(0x01000007),
    ("darwin", "arm64"): fake_macho(0x0100000C),
}


def make_dist(root, version="1.2.3", binaries=None):
    """Write a GoReleaser-like dist/ under root and return its path."""
    dist = os.path.join(root, "dist")
    artifacts = []
    for (goos, goarch), data in (binaries or BINARIES).items():
        rel = f"dist/nanosandbox-mcp_{goos}_{goarch}/nanosandbox-mcp"
        os.makedirs(os.path.join(root, os.path.dirname(rel)))
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
        artifacts.append({"name": "nanosandbox-mcp", "path": rel, "goos": goos, "goarch": goarch, "type": "Binary"})
    artifacts.append({"name": "checksums.txt", "path": "dist/checksums.txt", "type": "Checksum"})
    with open(os.path.join(dist, "artifacts.json"), "w") as f:
        json.dump(artifacts, f)
    with open(os.path.join(dist, "metadata.json"), "w") as f:
        json.dump({"project_name": "nanosandbox-mcp", "version": version}, f)
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write("# nanosandbox-mcp\n\n" + "A sandbox for commands an AI agent runs. " * 10 + "\n")
    with open(os.path.join(root, "LICENSE"), "w") as f:
        f.write("MIT License\n")
    return dist


def rewrite(path, change):
    """Rewrite the wheel at path, passing each (ZipInfo, data) through change."""
    with zipfile.ZipFile(path) as zf:
        entries = [(i, zf.read(i)) for i in zf.infolist()]
    with zipfile.ZipFile(path, "w") as zf:
        for info, data in entries:
            info, data = change(info, data)
            zf.writestr(info, data)


class WheelTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.dist = make_dist(self.tmp)
        self.out = os.path.join(self.tmp, "wheels")

    def build(self, **kw):
        kw.setdefault("readme", os.path.join(self.tmp, "README.md"))
        kw.setdefault("license_path", os.path.join(self.tmp, "LICENSE"))
        return build_wheels.build_all(self.dist, self.out, **kw)

    def wheel(self, plat):
        (path,) = [p for p in self.build() if p.endswith(f"-{plat}.whl")]
        return path

    def test_pep440(self):
        for semver, want in [
            ("1.2.3", "1.2.3"),
            ("v1.2.3", "1.2.3"),
            ("0.1.1-dev", "0.1.1.dev0"),
            ("0.1.1-dev.4", "0.1.1.dev4"),
            ("1.0.0-rc.1", "1.0.0rc1"),
            ("1.0.0-rc2", "1.0.0rc2"),
            ("1.0.0-beta.3", "1.0.0b3"),
            ("1.0.0-alpha", "1.0.0a0"),
            ("01.2.3", "1.2.3"),
        ]:
            with self.subTest(semver=semver):
                self.assertEqual(build_wheels.pep440(semver), want)
        for bad in ["1.2", "1.2.3-snapshot", "1.2.3+build", "latest", "1.2.3-rc.1.2"]:
            with self.subTest(bad=bad):
                with self.assertRaises(build_wheels.BuildError):
                    build_wheels.pep440(bad)

    def test_record_hash(self):
        # sha256 of b"" in the urlsafe, unpadded form pip and uv expect.
        self.assertEqual(build_wheels.record_hash(b""), "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")

    def test_platform_tags_are_the_platform_table(self):
        with open(build_wheels.PLATFORMS_JSON, encoding="utf-8") as f:
            table = json.load(f)
        self.assertEqual(build_wheels.PLATFORM_TAGS, {(p["goos"], p["goarch"]): p["wheel_tags"] for p in table})
        self.assertEqual(len(build_wheels.PLATFORM_TAGS), len(table), "a platform listed twice")
        self.assertEqual(set(BINARIES), set(build_wheels.PLATFORM_TAGS), "the fake dist has a binary per platform")
        for _, goarch in build_wheels.PLATFORM_TAGS:
            self.assertIn(goarch, check_wheels.ELF_MACHINE)
            self.assertIn(goarch, check_wheels.MACHO_CPU)

    def test_one_wheel_per_platform_with_the_design_tags(self):
        names = sorted(os.path.basename(p) for p in self.build())
        self.assertEqual(names, sorted([
            "nanosandbox_mcp-1.2.3-py3-none-macosx_12_0_arm64.whl",
            "nanosandbox_mcp-1.2.3-py3-none-macosx_12_0_x86_64.whl",
            f"nanosandbox_mcp-1.2.3-py3-none-{LINUX_AARCH64}.whl",
            f"nanosandbox_mcp-1.2.3-py3-none-{LINUX_X86_64}.whl",
        ]))

    def test_checker_accepts_the_built_wheels(self):
        self.build()
        self.assertEqual(check_wheels.main(["--all", self.out]), 0)

    def test_layout_modes_and_record(self):
        path = self.wheel(LINUX_X86_64)
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            self.assertEqual(names, [
                "nanosandbox_mcp/__init__.py",
                "nanosandbox_mcp/__main__.py",
                "nanosandbox_mcp-1.2.3.data/scripts/nanosandbox-mcp",
                "nanosandbox_mcp-1.2.3.dist-info/METADATA",
                "nanosandbox_mcp-1.2.3.dist-info/WHEEL",
                "nanosandbox_mcp-1.2.3.dist-info/licenses/LICENSE",
                "nanosandbox_mcp-1.2.3.dist-info/RECORD",
            ])
            binary = zf.getinfo("nanosandbox_mcp-1.2.3.data/scripts/nanosandbox-mcp")
            self.assertEqual(binary.external_attr >> 16, 0o100755)
            self.assertEqual(zf.read(binary), BINARIES[("linux", "amd64")])
            self.assertEqual(zf.getinfo("nanosandbox_mcp/__main__.py").external_attr >> 16, 0o100644)
            rows = list(csv.reader(io.StringIO(zf.read("nanosandbox_mcp-1.2.3.dist-info/RECORD").decode())))
            data = BINARIES[("linux", "amd64")]
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            self.assertIn(["nanosandbox_mcp-1.2.3.data/scripts/nanosandbox-mcp", f"sha256={digest}", str(len(data))], rows)
            self.assertEqual(rows[-1], ["nanosandbox_mcp-1.2.3.dist-info/RECORD", "", ""])
            wheel = zf.read("nanosandbox_mcp-1.2.3.dist-info/WHEEL").decode()
            self.assertIn("Root-Is-Purelib: false\n", wheel)
            self.assertEqual([l for l in wheel.splitlines() if l.startswith("Tag: ")], [
                "Tag: py3-none-manylinux_2_17_x86_64",
                "Tag: py3-none-manylinux2014_x86_64",
                "Tag: py3-none-musllinux_1_1_x86_64",
            ])
            meta = zf.read("nanosandbox_mcp-1.2.3.dist-info/METADATA").decode()
            self.assertTrue(meta.startswith("Metadata-Version: 2.4\nName: nanosandbox-mcp\nVersion: 1.2.3\n"))
            self.assertIn("\nLicense-Expression: MIT\nLicense-File: LICENSE\n", meta)
            self.assertNotIn("\nLicense: ", meta)
            self.assertNotIn("License ::", meta)
            self.assertEqual(zf.read("nanosandbox_mcp-1.2.3.dist-info/licenses/LICENSE"), b"MIT License\n")
            self.assertIn("\n\n# nanosandbox-mcp\n\nA sandbox", meta)
            self.assertIn('__version__ = "1.2.3"', zf.read("nanosandbox_mcp/__init__.py").decode())

    def test_pre_release_versions_are_pep440(self):
        self.dist = make_dist(os.path.join(self.tmp, "pre"), version="0.4.1-dev")
        for p in self.build():
            self.assertIn("nanosandbox_mcp-0.4.1.dev0-py3-none-", p)
        self.assertEqual(check_wheels.main(["--all", self.out]), 0)

    def test_reproducible(self):
        first = {os.path.basename(p): open(p, "rb").read() for p in self.build(epoch=1700000000)}
        second = {os.path.basename(p): open(p, "rb").read() for p in self.build(epoch=1700000000)}
        self.assertEqual(first, second)

    def test_missing_platform_fails(self):
        bins = dict(BINARIES)
        del bins[("darwin", "arm64")]
        self.dist = make_dist(os.path.join(self.tmp, "partial"), binaries=bins)
        with self.assertRaisesRegex(build_wheels.BuildError, "no binary for darwin/arm64"):
            self.build()

    def test_checker_rejects_a_changed_file(self):
        path = self.wheel(LINUX_X86_64)
        rewrite(path, lambda i, d: (i, d + b"# changed\n" if i.filename.endswith("__main__.py") else d))
        with self.assertRaisesRegex(check_wheels.CheckError, "RECORD hash of nanosandbox_mcp/__main__.py"):
            check_wheels.check_wheel(path)

    def test_checker_rejects_a_lost_executable_bit(self):
        path = self.wheel(LINUX_X86_64)

        def chmod(info, data):
            if info.filename.endswith("/scripts/nanosandbox-mcp"):
                info.external_attr = 0o100644 << 16
            return info, data

        rewrite(path, chmod)
        with self.assertRaisesRegex(check_wheels.CheckError, "mode 100644"):
            check_wheels.check_wheel(path)

    def test_checker_rejects_a_binary_for_another_cpu(self):
        bins = dict(BINARIES)
        bins[("linux", "amd64")] = fake_elf(183)
        self.dist = make_dist(os.path.join(self.tmp, "wrong"), binaries=bins)
        path = self.wheel(LINUX_X86_64)
        with self.assertRaisesRegex(check_wheels.CheckError, "ELF machine 183, want 62"):
            check_wheels.check_wheel(path)

    def test_checker_rejects_a_dynamic_linux_binary(self):
        bins = dict(BINARIES)
        bins[("linux", "arm64")] = fake_elf(183, interp=True)
        self.dist = make_dist(os.path.join(self.tmp, "dyn"), binaries=bins)
        path = self.wheel(LINUX_AARCH64)
        with self.assertRaisesRegex(check_wheels.CheckError, "dynamically linked"):
            check_wheels.check_wheel(path)

    def test_checker_rejects_a_file_missing_from_record(self):
        path = self.wheel("macosx_12_0_arm64")
        with zipfile.ZipFile(path, "a") as zf:
            info = zipfile.ZipInfo("nanosandbox_mcp/extra.py")
            info.external_attr = 0o100644 << 16
            zf.writestr(info, "x = 1\n")
        with self.assertRaisesRegex(check_wheels.CheckError, "RECORD lists"):
            check_wheels.check_wheel(path)

    def test_metadata_is_valid_core_metadata_2_4(self):
        try:
            from packaging.metadata import Metadata
        except ImportError:
            self.skipTest("needs packaging 24.1 or later (what twine validates uploads with)")
        path = self.wheel(LINUX_X86_64)
        with zipfile.ZipFile(path) as zf:
            raw = zf.read("nanosandbox_mcp-1.2.3.dist-info/METADATA")
        meta = Metadata.from_email(raw, validate=True)
        self.assertEqual(str(meta.metadata_version), "2.4")
        self.assertEqual(str(meta.license_expression), "MIT")
        self.assertEqual(meta.license_files, ["LICENSE"])

    def test_a_missing_license_file_fails_the_build(self):
        with self.assertRaisesRegex(build_wheels.BuildError, "no license file"):
            self.build(license_path=os.path.join(self.tmp, "NO-LICENSE"))

    def test_checker_rejects_a_license_field_or_classifier_beside_the_expression(self):
        for extra, want in [(b"License: MIT\n", "License field"),
                            (b"Classifier: License :: OSI Approved :: MIT License\n", "license classifiers")]:
            with self.subTest(extra=extra):
                path = self.wheel(LINUX_X86_64)

                def add(info, data, extra=extra):
                    if info.filename.endswith("/METADATA"):
                        data = data.replace(b"Keywords: ", extra + b"Keywords: ", 1)
                    return info, data

                rewrite(path, add)
                with self.assertRaisesRegex(check_wheels.CheckError, want):
                    check_wheels.check_wheel(path)

    def test_checker_rejects_unknown_tags(self):
        path = self.wheel("macosx_12_0_arm64")
        bad = path.replace("macosx_12_0_arm64", "macosx_11_0_arm64")
        os.rename(path, bad)
        with self.assertRaisesRegex(check_wheels.CheckError, "platform tag"):
            check_wheels.check_wheel(bad)


@unittest.skipUnless(sys.platform == "linux" and platform.machine() == "x86_64", "installs the linux x86_64 wheel")
@unittest.skipUnless(importlib.util.find_spec("pip"), "needs pip")
class InstallTest(unittest.TestCase):
    """pip installs a wheel whose 'binary' is a shell script, then runs it both ways."""

    def test_pip_install_puts_the_binary_on_path_and_python_m_execs_it(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        bins = dict(BINARIES)
        bins[("linux", "amd64")] = b'#!/bin/sh\necho "fake binary: $*"\nexit 3\n'
        dist = make_dist(tmp, binaries=bins)
        out = os.path.join(tmp, "wheels")
        build_wheels.build_all(dist, out, readme=os.path.join(tmp, "README.md"))
        venv = os.path.join(tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        # The pip running these tests installs into the bare venv (pip 22.3+).
        env = dict(os.environ, PIP_FIND_LINKS="", PIP_DISABLE_PIP_VERSION_CHECK="1")
        subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-index",
                        "--find-links", out, "nanosandbox-mcp"], check=True, env=env)
        installed = os.path.join(venv, "bin", "nanosandbox-mcp")
        self.assertTrue(os.access(installed, os.X_OK), "binary is not executable after install")
        r = subprocess.run([installed, "a", "b c"], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout), (3, "fake binary: a b c\n"))
        r = subprocess.run([py, "-m", "nanosandbox_mcp", "--version"], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout), (3, "fake binary: --version\n"))
        # Without the binary, python -m says what to do.
        os.remove(installed)
        r = subprocess.run([py, "-m", "nanosandbox_mcp"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("nanosandbox-mcp: error: the nanosandbox-mcp binary is not installed", r.stderr)
        self.assertIn("pip install --force-reinstall nanosandbox-mcp", r.stderr)


class WorkingDirectoryTest(unittest.TestCase):
    """python -m nanosandbox_mcp started in a directory commands write (MCP
    clients start servers in the project) imports nothing from there: a
    planted sysconfig.py, which __main__ imports, ran as the user."""

    def test_a_planted_stdlib_module_is_not_imported(self):
        with tempfile.TemporaryDirectory() as ws, tempfile.TemporaryDirectory() as other:
            marker = os.path.join(other, "ran")
            with open(os.path.join(ws, "sysconfig.py"), "w") as f:
                f.write("open(%r, 'w').write('x')\n" % marker)
            env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
            r = subprocess.run([sys.executable, "-m", "nanosandbox_mcp", "--version"], cwd=ws,
                               capture_output=True, text=True, env=env)
            self.assertFalse(os.path.exists(marker), "the workspace's sysconfig.py ran: " + r.stderr)
            self.assertIn("nanosandbox-mcp: error:", r.stderr)


if __name__ == "__main__":
    unittest.main()
