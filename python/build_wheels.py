#!/usr/bin/env python3
"""Build one wheel per platform from GoReleaser's output (standard library only).

    python3 python/build_wheels.py [--dist dist] [--out dist/wheels] [--version V]

Each wheel holds the static binary under nanosandbox_mcp-VER.data/scripts/
(installers put it straight onto PATH as ``nanosandbox-mcp``), the small
``nanosandbox_mcp`` package whose ``python -m nanosandbox_mcp`` execs it, and
the .dist-info files: METADATA (core metadata 2.4, the license as an SPDX
License-Expression and its License-File, the README as the description),
WHEEL, licenses/LICENSE (PEP 639), RECORD.

The version comes from dist/metadata.json (semver, as GoReleaser gives it)
and is written in its PEP 440 form: 1.2.3-rc.1 -> 1.2.3rc1, 0.1.1-dev -> 0.1.1.dev0.
Paths in dist/artifacts.json are relative to the directory GoReleaser ran in:
the parent of --dist, or else the current directory. Zip entries carry
SOURCE_DATE_EPOCH (default 1980-01-01), so the same inputs give the same bytes.
"""

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import re
import sys
import time
import zipfile

NAME = "nanosandbox-mcp"
DIST_NAME = "nanosandbox_mcp"  # the name as wheel file names spell it
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nanosandbox_mcp")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The one platform table, which the npm launcher reads at run time and so
# ships inside it; the stager and the checks read it too.
PLATFORMS_JSON = os.path.join(REPO_ROOT, "npm", "nanosandbox-mcp", "lib", "platforms.json")


def read_platform_tags(path=PLATFORMS_JSON):
    """Return {(goos, goarch): [platform tag, ...]} from the platform table."""
    with open(path, encoding="utf-8") as f:
        return {(p["goos"], p["goarch"]): list(p["wheel_tags"]) for p in json.load(f)}


# Platform tags per GOOS/GOARCH (DESIGN.md §6). The Linux binary is static,
# so it runs on any glibc (manylinux) and on musl (musllinux); Go 1.26 needs
# macOS 12.
PLATFORM_TAGS = read_platform_tags()
PYTHON_TAG, ABI_TAG = "py3", "none"

SUMMARY = "MCP server whose one tool, run_command, runs programs in an OS sandbox"
HOMEPAGE = "https://github.com/nanosandbox/nanosandbox-mcp"
# Core metadata 2.4 (PEP 639): the license as an SPDX expression, and the
# file that holds it, at .dist-info/licenses/LICENSE. No License field and no
# license classifier: with License-Expression, PyPI refuses both.
METADATA_VERSION = "2.4"
LICENSE_EXPRESSION = "MIT"
LICENSE_FILE = "LICENSE"

MODE_FILE, MODE_EXEC = 0o644, 0o755
S_IFREG = 0o100000
DEFAULT_EPOCH = 315532800  # 1980-01-01, the earliest time a zip entry can carry


class BuildError(Exception):
    pass


_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$")
_PRE = re.compile(r"^(alpha|a|beta|b|rc|dev)\.?(\d+)?$")
_PEP440_PRE = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "rc": "rc"}


def pep440(version):
    """Return the PEP 440 form of a semver release version."""
    m = _SEMVER.match(version)
    if not m:
        raise BuildError(f"version {version!r} is not semver (want 1.2.3, 1.2.3-rc.1 or 1.2.3-dev)")
    base = ".".join(str(int(p)) for p in m.groups()[:3])
    pre = m.group(4)
    if pre is None:
        return base
    p = _PRE.match(pre)
    if not p:
        raise BuildError(f"pre-release {pre!r} of {version!r} has no PEP 440 form (use alpha.N, beta.N, rc.N or dev.N)")
    kind, num = p.group(1), int(p.group(2) or 0)
    if kind == "dev":
        return f"{base}.dev{num}"
    return f"{base}{_PEP440_PRE[kind]}{num}"


def record_hash(data):
    """Return the RECORD form of data's hash: sha256=<urlsafe base64, no padding>."""
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def wheel_name(version, tags):
    return f"{DIST_NAME}-{version}-{PYTHON_TAG}-{ABI_TAG}-{'.'.join(tags)}.whl"


def metadata_text(version, readme):
    lines = [
        f"Metadata-Version: {METADATA_VERSION}",
        f"Name: {NAME}",
        f"Version: {version}",
        f"Summary: {SUMMARY}",
        f"License-Expression: {LICENSE_EXPRESSION}",
        f"License-File: {LICENSE_FILE}",
        "Keywords: mcp,model-context-protocol,sandbox,landlock,seccomp",
        "Classifier: Environment :: Console",
        "Classifier: Operating System :: MacOS",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Topic :: Security",
        f"Project-URL: Homepage, {HOMEPAGE}",
        f"Project-URL: Source, {HOMEPAGE}",
        f"Project-URL: Changelog, {HOMEPAGE}#changelog",
        f"Project-URL: Issues, {HOMEPAGE}/issues",
        "Requires-Python: >=3.8",
        "Description-Content-Type: text/markdown",
        "",
        readme.rstrip("\n"),
        "",
    ]
    return "\n".join(lines)


def wheel_text(tags):
    lines = [
        "Wheel-Version: 1.0",
        "Generator: nanosandbox-mcp build_wheels.py",
        "Root-Is-Purelib: false",
    ]
    lines += [f"Tag: {PYTHON_TAG}-{ABI_TAG}-{t}" for t in tags]
    return "\n".join(lines) + "\n"


def package_files(version):
    """Return [(path in wheel, bytes)] of the nanosandbox_mcp package."""
    files = []
    for name in ("__init__.py", "__main__.py"):
        with open(os.path.join(PACKAGE_DIR, name), "rb") as f:
            data = f.read()
        if name == "__init__.py":
            data, n = re.subn(rb'__version__ = "[^"]*"', f'__version__ = "{version}"'.encode(), data)
            if n != 1:
                raise BuildError("nanosandbox_mcp/__init__.py has no __version__ line to stamp")
        files.append((f"nanosandbox_mcp/{name}", data))
    return files


def build_wheel(out, version, tags, binary, readme, license_text, epoch=DEFAULT_EPOCH):
    """Write one wheel into out and return its path."""
    data_dir = f"{DIST_NAME}-{version}.data"
    info_dir = f"{DIST_NAME}-{version}.dist-info"
    entries = package_files(version)
    entries.append((f"{data_dir}/scripts/{NAME}", binary))
    entries.append((f"{info_dir}/METADATA", metadata_text(version, readme).encode("utf-8")))
    entries.append((f"{info_dir}/WHEEL", wheel_text(tags).encode("utf-8")))
    entries.append((f"{info_dir}/licenses/{LICENSE_FILE}", license_text.encode("utf-8")))

    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for path, data in entries:
        writer.writerow([path, record_hash(data), len(data)])
    writer.writerow([f"{info_dir}/RECORD", "", ""])
    entries.append((f"{info_dir}/RECORD", record.getvalue().encode("utf-8")))

    date_time = time.gmtime(max(epoch, DEFAULT_EPOCH))[:6]
    path = os.path.join(out, wheel_name(version, tags))
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=date_time)
            info.create_system = 3  # unix, so installers honour the mode bits
            mode = MODE_EXEC if name.endswith(f"/scripts/{NAME}") else MODE_FILE
            info.external_attr = (S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data, compresslevel=9)
    return path


def read_binaries(dist):
    """Return {(goos, goarch): path} of the four release binaries."""
    with open(os.path.join(dist, "artifacts.json"), encoding="utf-8") as f:
        artifacts = json.load(f)
    found = {}
    for a in artifacts:
        if a.get("type") != "Binary" or a.get("name") != NAME:
            continue
        key = (a["goos"], a["goarch"])
        if key in found:
            raise BuildError(f"two binaries for {key[0]}/{key[1]} in artifacts.json")
        p = a["path"]
        candidates = [p] if os.path.isabs(p) else [os.path.join(os.path.dirname(os.path.abspath(dist)), p), os.path.abspath(p)]
        path = next((c for c in candidates if os.path.isfile(c)), None)
        if path is None:
            raise BuildError(f"binary for {key[0]}/{key[1]} not found at {p}")
        found[key] = path
    missing = sorted(set(PLATFORM_TAGS) - set(found))
    if missing:
        raise BuildError(f"no binary for {', '.join('/'.join(m) for m in missing)} in artifacts.json")
    return found


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def build_all(dist, out, version=None, readme=None, license_path=None, epoch=None):
    """Build every wheel; return their paths."""
    if version is None:
        with open(os.path.join(dist, "metadata.json"), encoding="utf-8") as f:
            version = json.load(f)["version"]
    version = pep440(version)
    readme = read_text(readme or os.path.join(REPO_ROOT, "README.md"))
    license_path = license_path or os.path.join(REPO_ROOT, LICENSE_FILE)
    if not os.path.isfile(license_path):
        raise BuildError(f"no license file at {license_path}: METADATA names it (License-File)")
    license_text = read_text(license_path)
    if epoch is None:
        epoch = int(os.environ.get("SOURCE_DATE_EPOCH", DEFAULT_EPOCH))
    binaries = read_binaries(dist)
    os.makedirs(out, exist_ok=True)
    for old in os.listdir(out):
        if old.startswith(f"{DIST_NAME}-") and old.endswith(".whl"):
            os.remove(os.path.join(out, old))
    paths = []
    for key, tags in PLATFORM_TAGS.items():
        with open(binaries[key], "rb") as f:
            binary = f.read()
        paths.append(build_wheel(out, version, tags, binary, readme, license_text, epoch))
    return paths


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dist", default="dist", help="GoReleaser's dist directory (default dist)")
    p.add_argument("--out", help="where to write the wheels (default DIST/wheels)")
    p.add_argument("--version", help="release version (default: from DIST/metadata.json)")
    p.add_argument("--readme", help="long description (default: the repository's README.md)")
    args = p.parse_args(argv)
    out = args.out or os.path.join(args.dist, "wheels")
    try:
        paths = build_all(args.dist, out, args.version, args.readme)
    except (BuildError, OSError, KeyError, ValueError) as e:
        print(f"build_wheels: {e}", file=sys.stderr)
        return 1
    for path in paths:
        print(f"built {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
