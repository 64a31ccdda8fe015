#!/usr/bin/env python3
"""Checks .ci/dist-test makes on release artifacts and installed wrappers.

Standard library only. Subcommands:

  binaries DIST            every Binary in DIST/artifacts.json: Linux ones are
                           static ELF for their CPU (no PT_INTERP, no
                           PT_DYNAMIC), darwin ones Mach-O for their CPU
  archives DIST            every archive holds LICENSE, README.md and the
                           binary (mode 0755, same bytes); checksums.txt holds
  elf-machine FILE         print the ELF machine of FILE (x86_64, aarch64)
  targets                  print each released GOOS/GOARCH, one a line, from
                           the platform table
  platform GOOS GOARCH     print that platform's npm package and wheel tag
                           (dot-joined), from the platform table; fail if it
                           is not released
  npm-packages             print the npm platform packages, sorted, one a line
  roundtrip [--version V] -- CMD...
                           start CMD as an MCP server over stdio: initialize
                           (2025-11-25), notifications/initialized, tools/list,
                           tools/call run_command echo hi; stdin stays open
                           until the replies arrive, then closes; CMD must
                           exit 0
  sigterm-during-call [--also ARG] -- CMD...
                           start CMD as an MCP server, call run_command with
                           a long sleep, SIGTERM CMD's process while it runs,
                           then check that no process is left whose argv
                           holds the sleep's argument (or an --also ARG)
  sigterm-oneshot [--also ARG] -- CMD...
                           same for a one-shot CMD (CMD + sleep N)
  next-version README      print the newest version in README's changelog:
                           the release being prepared
  release-version [--tag TAG] README
                           the changelog's versions are semver, newest
                           first, and the newest orders above every version
                           PyPI had before this program (0.3.0 to 0.3.3)
                           for npm (semver) and PyPI (PEP 440, as the wheels
                           are numbered); with --tag, TAG is v + that
                           version, or a pre-release of it (v1.2.3-rc.1)
  reproducible DIST_A DIST_B [SUBDIR...]
                           every artifact in DIST_A/artifacts.json but the
                           metadata, and every file in each SUBDIR of the
                           dists (wheels, npm tarballs), has the same sha256
                           in DIST_B
  formula DIST             the Homebrew formula names every archive with its
                           sha256, and the version
  module-proxy ROOT VERSION OUT
                           write a GOPROXY=file:// directory in OUT that
                           serves the module at ROOT (its working tree: the
                           files git tracks or would, less nested modules)
                           as VERSION, for go install MODULE@VERSION
  standin-wheel GOOS GOARCH OUT
                           write a wheel of nanosandbox-mcp 0.3.3 for that
                           platform into OUT, whose "binary" prints
                           "nanosandbox-mcp 0.3.3 (stand-in)": the version
                           PyPI has, for resolvers to choose against
  lint-workflows [--pins FILE] WORKFLOW...
                           every action is pinned by a full commit with its
                           tag in a comment, as FILE (.github/action-pins.txt)
                           records it, and every row of FILE is used; every
                           checkout sets persist-credentials: false; the PyPI
                           upload sets skip-existing: true; every
                           tool installed from a registry (pip, npm -g, npx,
                           go install, go run) names an exact version
"""

import argparse
import hashlib
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import tarfile
import time

# The one platform table: what is released, for Go, npm and PyPI. The npm
# launcher reads it at run time, so it ships inside it.
PLATFORMS_JSON = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                               "npm", "nanosandbox-mcp", "lib", "platforms.json"))


def read_platforms():
    with open(PLATFORMS_JSON, encoding="utf-8") as f:
        return json.load(f)


def npm_package(p):
    return f"nanosandbox-mcp-{p['npm_os']}-{p['npm_cpu']}"


# ELF e_machine and Mach-O cputype for each GOARCH.
ELF_MACHINE = {"amd64": 62, "arm64": 183}
ELF_MACHINE_NAME = {62: "x86_64", 183: "aarch64"}
MACHO_CPU = {"amd64": 0x01000007, "arm64": 0x0100000C}
PT_DYNAMIC, PT_INTERP = 2, 3
MH_MAGIC_64, MH_EXECUTE = 0xFEEDFACF, 2
LC_BUILD_VERSION = 0x32

PROTOCOL_VERSION = "2025-11-25"


class CheckError(Exception):
    pass


def ok(msg):
    print(f"  ok  {msg}", flush=True)


def elf_info(data):
    """Return (e_machine, [p_type...]) of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF":
        raise CheckError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise CheckError("not a 64-bit little-endian ELF file")
    (e_type, e_machine, _ver, _entry, e_phoff, _shoff, _flags, _ehsize,
     e_phentsize, e_phnum) = struct.unpack_from("<HHIQQQIHHH", data, 16)
    types = []
    for i in range(e_phnum):
        (p_type,) = struct.unpack_from("<I", data, e_phoff + i * e_phentsize)
        types.append(p_type)
    return e_type, e_machine, types


def macho_info(data):
    """Return (cputype, filetype, minos) of a 64-bit Mach-O file."""
    (magic, cputype, _sub, filetype, ncmds, _size, _flags) = struct.unpack_from("<IiiIIII", data, 0)
    if magic != MH_MAGIC_64:
        raise CheckError(f"not a 64-bit Mach-O file (magic {magic:#x})")
    off, minos = 32, None
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, off)
        if cmd == LC_BUILD_VERSION:
            (_platform, packed) = struct.unpack_from("<II", data, off + 8)
            minos = f"{packed >> 16}.{(packed >> 8) & 0xFF}"
        off += cmdsize
    return cputype & 0xFFFFFFFF, filetype, minos


def load_artifacts(dist):
    with open(os.path.join(dist, "artifacts.json"), encoding="utf-8") as f:
        artifacts = json.load(f)
    root = os.path.dirname(os.path.abspath(dist))

    def resolve(p):
        return p if os.path.isabs(p) else os.path.join(root, p)

    return artifacts, resolve


def check_binaries(dist):
    artifacts, resolve = load_artifacts(dist)
    seen = set()
    for a in artifacts:
        if a.get("type") != "Binary":
            continue
        goos, goarch = a["goos"], a["goarch"]
        path = resolve(a["path"])
        with open(path, "rb") as f:
            data = f.read()
        size = f"{len(data) / 1e6:.1f} MB"
        if goos == "linux":
            e_type, machine, phdrs = elf_info(data)
            if machine != ELF_MACHINE[goarch]:
                raise CheckError(f"{path}: ELF machine {machine}, want {ELF_MACHINE[goarch]} for {goarch}")
            if PT_INTERP in phdrs:
                raise CheckError(f"{path}: has a program interpreter (PT_INTERP): dynamically linked")
            if PT_DYNAMIC in phdrs:
                raise CheckError(f"{path}: has a PT_DYNAMIC segment: dynamically linked")
            ok(f"linux/{goarch}: static ELF {ELF_MACHINE_NAME[machine]}, no PT_INTERP, e_type {e_type}, {size}")
        elif goos == "darwin":
            cputype, filetype, minos = macho_info(data)
            if cputype != MACHO_CPU[goarch]:
                raise CheckError(f"{path}: Mach-O cputype {cputype:#x}, want {MACHO_CPU[goarch]:#x} for {goarch}")
            if filetype != MH_EXECUTE:
                raise CheckError(f"{path}: Mach-O filetype {filetype}, want MH_EXECUTE")
            ok(f"darwin/{goarch}: Mach-O 64 cputype {cputype:#x} executable, minimum macOS {minos}, {size}")
        else:
            raise CheckError(f"unexpected binary for {goos}/{goarch}")
        if os.stat(path).st_mode & 0o755 != 0o755:
            raise CheckError(f"{path}: mode {os.stat(path).st_mode:o}, want 0755")
        seen.add(f"{goos}/{goarch}")
    want = {f"{p['goos']}/{p['goarch']}" for p in read_platforms()}
    if seen != want:
        raise CheckError(f"binaries for {sorted(seen)}, want {sorted(want)}")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_archives(dist):
    artifacts, resolve = load_artifacts(dist)
    binaries = {(a["goos"], a["goarch"]): resolve(a["path"]) for a in artifacts if a.get("type") == "Binary"}
    archives = [a for a in artifacts if a.get("type") == "Archive"]
    if len(archives) != 4:
        raise CheckError(f"{len(archives)} archives, want 4")
    for a in archives:
        path = resolve(a["path"])
        if not path.endswith(".tar.gz"):
            raise CheckError(f"{path}: not a .tar.gz")
        with tarfile.open(path, "r:gz") as tar:
            members = {m.name: m for m in tar.getmembers()}
            if set(members) != {"LICENSE", "README.md", "nanosandbox-mcp"}:
                raise CheckError(f"{path}: holds {sorted(members)}")
            m = members["nanosandbox-mcp"]
            if not m.isfile() or m.mode & 0o777 != 0o755:
                raise CheckError(f"{path}: nanosandbox-mcp has mode {m.mode:o}, want 0755")
            data = tar.extractfile(m).read()
        with open(binaries[(a["goos"], a["goarch"])], "rb") as f:
            if f.read() != data:
                raise CheckError(f"{path}: binary differs from the built one")
        ok(f"{os.path.basename(path)}: LICENSE, README.md, nanosandbox-mcp (0755), {os.path.getsize(path) / 1e6:.1f} MB")
    sums = {}
    with open(os.path.join(dist, "checksums.txt"), encoding="utf-8") as f:
        for line in f:
            digest, name = line.split()
            sums[name] = digest
    for a in archives:
        name = os.path.basename(a["path"])
        if sums.get(name) != sha256(resolve(a["path"])):
            raise CheckError(f"checksums.txt: {name} does not match")
    ok(f"checksums.txt: sha256 of all {len(archives)} archives match")


# The versions PyPI had of nanosandbox-mcp before this program: the Rust
# program it replaces under the same name. A release must order above every
# one, or resolvers keep installing the old program.
PREVIOUS_VERSIONS = ("0.3.0", "0.3.1", "0.3.2", "0.3.3")

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")
_PEP440 = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:(a|b|rc)(\d+))?(?:\.dev(\d+))?$")
_CHANGELOG_ENTRY = re.compile(r"^### (\S+)")


def semver_key(v):
    """Return a key that orders semver versions as npm does (semver 2.0.0)."""
    m = _SEMVER.match(v)
    if not m:
        raise CheckError(f"{v!r} is not semver")
    core = tuple(int(x) for x in m.groups()[:3])
    if m.group(4) is None:
        return core + (1, ())
    ids = tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in m.group(4).split("."))
    return core + (0, ids)


def pep440_key(v):
    """Return a key that orders the PEP 440 versions the wheels carry
    (X.Y.Z, X.Y.ZaN, X.Y.ZbN, X.Y.ZrcN, X.Y.Z.devN) as pip and uv do."""
    m = _PEP440.match(v)
    if not m:
        raise CheckError(f"{v!r} is not a PEP 440 version of the forms the wheels use")
    core = tuple(int(x) for x in m.groups()[:3])
    phase = {"a": 1, "b": 2, "rc": 3, None: 4}[m.group(4)]
    pre = int(m.group(5) or 0)
    dev = m.group(6)
    if dev is not None and m.group(4) is None:
        return core + (0, 0, int(dev))  # X.Y.Z.devN comes before any pre-release of X.Y.Z
    return core + (phase, pre, int(dev) if dev is not None else 1 << 62)


def pep440(version):
    """The PEP 440 form python/build_wheels.py gives a semver version."""
    sys.path.insert(0, os.path.join(os.path.dirname(PLATFORMS_JSON), "..", "..", "..", "python"))
    try:
        import build_wheels
    finally:
        sys.path.pop(0)
    try:
        return build_wheels.pep440(version)
    except build_wheels.BuildError as e:
        raise CheckError(str(e))


def changelog_versions(readme):
    """Return the versions of README's "## Changelog" entries, in order."""
    with open(readme, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = lines.index("## Changelog")
    except ValueError:
        raise CheckError(f"{readme} has no \"## Changelog\" section")
    versions = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        m = _CHANGELOG_ENTRY.match(line)
        if m:
            versions.append(m.group(1))
    if not versions:
        raise CheckError(f"{readme}: the changelog has no \"### X.Y.Z\" entry")
    return versions


def check_release_version(readme, tag):
    versions = changelog_versions(readme)
    for v in versions:
        semver_key(v)
    if [semver_key(v) for v in versions] != sorted((semver_key(v) for v in versions), reverse=True) or \
            len(set(versions)) != len(versions):
        raise CheckError(f"{readme}: changelog entries {versions} are not newest first")
    newest = versions[0]
    if _SEMVER.match(newest).group(4) is not None:
        raise CheckError(f"{readme}: the newest changelog entry {newest} is a pre-release; entries are releases")
    ok(f"changelog: {', '.join(versions)}, newest first; the release being prepared is {newest}")
    for what, key, conv in (("npm (semver)", semver_key, str), ("PyPI (PEP 440)", pep440_key, pep440)):
        below = [v for v in PREVIOUS_VERSIONS if not key(conv(v)) < key(conv(newest))]
        if below:
            raise CheckError(f"{newest} does not order above {', '.join(below)} for {what}")
        ok(f"{newest} ({conv(newest)}) orders above {', '.join(PREVIOUS_VERSIONS)} for {what}")
    if tag is None:
        return
    m = _SEMVER.match(tag[1:]) if tag.startswith("v") else None
    if not m or ".".join(m.groups()[:3]) != newest:
        raise CheckError(f"tag {tag}: want v{newest} (or a pre-release of it, v{newest}-rc.1): "
                         f"the changelog's newest entry, which says what the release changes")
    pep440(tag[1:])  # the wheels can be numbered from it
    ok(f"tag {tag} is the changelog's {newest}" + (" (a pre-release of it)" if m.group(4) else ""))


# Options of pip install that take a value.
_PIP_VALUE_OPTIONS = {"-r", "--requirement", "-c", "--constraint", "-f", "--find-links", "-i", "--index-url",
                      "--extra-index-url", "-t", "--target", "--prefix", "--root", "--python", "--platform"}
_USES = re.compile(r"^(\s*)(?:-\s+)?uses:\s*([^\s#]+)\s*(?:#\s*(\S+))?\s*$")


def read_pins(path):
    pins = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split()
            if len(fields) < 4 or not re.fullmatch(r"[0-9a-f]{40}", fields[2]):
                raise CheckError(f"{path}:{n}: want ACTION TAG COMMIT SOURCE..., got {line.strip()!r}")
            pins[fields[0]] = (fields[1], fields[2])
    return pins


def _commands(text, word):
    """Yield the token lists of shell commands in text that contain word
    (e.g. "pip install"), backslash continuations joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    for line in joined.splitlines():
        for part in re.split(r"&&|\|\||;|\|", line):
            tokens = part.split()
            for i in range(len(tokens) - len(word.split()) + 1):
                if tokens[i:i + len(word.split())] == word.split():
                    yield tokens[i + len(word.split()):]
                    break


def lint_workflows(files, pins_path):
    pins = read_pins(pins_path)
    used = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.splitlines()
        uses = checkouts = 0
        for n, line in enumerate(lines):
            m = _USES.match(line)
            if not m:
                continue
            ref, comment = m.group(2), m.group(3)
            where = f"{path}:{n + 1}"
            if ref.startswith("./"):
                continue
            if ref.startswith("docker://"):
                if "@sha256:" not in ref:
                    raise CheckError(f"{where}: {ref} is not pinned by digest")
                continue
            action, _, commit = ref.partition("@")
            repo = "/".join(action.split("/")[:2])
            if not re.fullmatch(r"[0-9a-f]{40}", commit):
                raise CheckError(f"{where}: {ref} is not pinned by a full commit")
            if repo not in pins:
                raise CheckError(f"{where}: {repo} has no row in {pins_path}")
            tag, want = pins[repo]
            if commit != want or comment != tag:
                raise CheckError(f"{where}: {ref} # {comment}: {pins_path} pins {repo} to {want} # {tag}")
            used.add(repo)
            uses += 1
            # The step's lines: those indented deeper than its "- uses:".
            indent = len(m.group(1))
            step = []
            for other in lines[n + 1:]:
                if other.strip() and len(other) - len(other.lstrip()) <= indent:
                    break
                step.append(other.strip())
            if repo == "actions/checkout":
                if "persist-credentials: false" not in step:
                    raise CheckError(f"{where}: actions/checkout without persist-credentials: false")
                checkouts += 1
            if repo == "pypa/gh-action-pypi-publish" and "skip-existing: true" not in step:
                raise CheckError(f"{where}: the PyPI upload without skip-existing: true (a re-run would fail on what is there)")
        for tokens in _commands(text, "pip install"):
            if "--no-index" in tokens:
                continue  # installs local files only
            skip = False
            for t in tokens:
                if skip:
                    skip = False
                elif t.startswith("-"):
                    skip = t in _PIP_VALUE_OPTIONS
                elif not re.fullmatch(r"[A-Za-z0-9._\[\]-]+==[0-9][0-9A-Za-z.+!-]*", t):
                    raise CheckError(f"{path}: pip install {t}: not pinned to an exact version (NAME==VERSION)")
        for word in ("npm install -g", "npm i -g", "npx"):
            for tokens in _commands(text, word):
                names = [t for t in tokens if not t.startswith("-")]
                if word == "npx":
                    names = names[:1]
                for t in names:
                    if not re.fullmatch(r"@?[^@\s]+@\d+\.\d+\.\d+[0-9A-Za-z.+-]*", t):
                        raise CheckError(f"{path}: {word} {t}: not pinned to an exact version (NAME@X.Y.Z)")
        for word in ("go install", "go run"):
            for tokens in _commands(text, word):
                for t in tokens:
                    if "@" in t and not t.startswith("-") and not re.fullmatch(r"[^@\s]+@v\d+\.\d+\.\d+[0-9A-Za-z.+-]*", t):
                        raise CheckError(f"{path}: {word} {t}: not pinned to an exact version (MODULE@vX.Y.Z)")
        ok(f"{os.path.basename(path)}: {uses} actions pinned by commit as {os.path.basename(pins_path)} records them, "
           f"{checkouts} checkouts without persisted credentials, tool installs pinned")
    unused = sorted(set(pins) - used)
    if unused:
        raise CheckError(f"{pins_path}: {', '.join(unused)} used by no workflow")


def check_reproducible(dist_a, dist_b, subdirs):
    artifacts, _ = load_artifacts(dist_a)
    names = sorted({os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(dist_a)), a["path"]), os.path.abspath(dist_a))
                    for a in artifacts if a.get("type") != "Metadata"})
    for sub in subdirs:
        names += sorted(os.path.join(sub, n) for n in os.listdir(os.path.join(dist_a, sub)))
    differ = []
    for n in names:
        a, b = os.path.join(dist_a, n), os.path.join(dist_b, n)
        if not os.path.isfile(b) or sha256(a) != sha256(b):
            differ.append(n)
    if differ:
        raise CheckError(f"{len(differ)} of {len(names)} artifacts differ between the two builds: {', '.join(differ)}")
    kinds = {}
    for a in artifacts:
        if a.get("type") != "Metadata":
            kinds[a["type"]] = kinds.get(a["type"], 0) + 1
    what = ", ".join(f"{v} {k.lower()}" for k, v in sorted(kinds.items()))
    what += "".join(f", {len(os.listdir(os.path.join(dist_a, sub)))} in {sub}/" for sub in subdirs)
    ok(f"two builds, byte for byte the same: all {len(names)} artifacts ({what})")


def check_formula(dist):
    artifacts, resolve = load_artifacts(dist)
    [formula] = [resolve(a["path"]) for a in artifacts if a.get("type") == "Homebrew Formula"]
    with open(formula, encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(dist, "metadata.json"), encoding="utf-8") as f:
        version = json.load(f)["version"]
    if f'version "{version}"' not in text:
        raise CheckError(f"{formula}: no version \"{version}\"")
    pairs = re.findall(r'url "([^"]+)"\s+sha256 "([0-9a-f]{64})"', text)
    got = {u.rsplit("/", 1)[1]: d for u, d in pairs}
    want = {os.path.basename(a["path"]): sha256(resolve(a["path"])) for a in artifacts if a.get("type") == "Archive"}
    if got != want:
        raise CheckError(f"{formula}: names {got}, want every archive with its sha256: {want}")
    if 'bin.install "nanosandbox-mcp"' not in text or "nanosandbox-mcp --version" not in text:
        raise CheckError(f"{formula}: no install of the binary, or no test of its --version")
    ok(f"{os.path.basename(formula)}: version {version}, {len(pairs)} archives with their sha256, install and test")


def make_module_proxy(root, version, out):
    root = os.path.abspath(root)
    with open(os.path.join(root, "go.mod"), encoding="utf-8") as f:
        gomod = f.read()
    module = re.search(r"^module\s+(\S+)", gomod, re.M).group(1)
    listing = subprocess.run(["git", "-C", root, "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                             check=True, capture_output=True).stdout.decode().split("\0")
    files = sorted({p for p in listing if p and os.path.isfile(os.path.join(root, p))
                    and not os.path.islink(os.path.join(root, p))})
    nested = {os.path.dirname(p) + "/" for p in files if p.endswith("/go.mod")}
    files = [p for p in files if not any(p.startswith(d) for d in nested)]
    base = os.path.join(out, *module.split("/"), "@v")
    os.makedirs(base, exist_ok=True)
    import zipfile
    with zipfile.ZipFile(os.path.join(base, f"{version}.zip"), "w", zipfile.ZIP_DEFLATED) as zf:
        for p in files:
            zf.write(os.path.join(root, p), f"{module}@{version}/{p}")
    with open(os.path.join(base, f"{version}.mod"), "w", encoding="utf-8") as f:
        f.write(gomod)
    with open(os.path.join(base, f"{version}.info"), "w", encoding="utf-8") as f:
        json.dump({"Version": version, "Time": "2026-01-01T00:00:00Z"}, f)
    with open(os.path.join(base, "list"), "w", encoding="utf-8") as f:
        f.write(version + "\n")
    ok(f"module proxy in {out}: {module}@{version}, {len(files)} files")


def standin_wheel(goos, goarch, out):
    sys.path.insert(0, os.path.join(os.path.dirname(PLATFORMS_JSON), "..", "..", "..", "python"))
    try:
        import build_wheels
    finally:
        sys.path.pop(0)
    root = os.path.join(os.path.dirname(PLATFORMS_JSON), "..", "..", "..")
    binary = b'#!/bin/sh\necho "nanosandbox-mcp 0.3.3 (stand-in)"\n'
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(root, "LICENSE"), encoding="utf-8") as f:
        license_text = f.read()
    path = build_wheels.build_wheel(out, "0.3.3", build_wheels.PLATFORM_TAGS[(goos, goarch)], binary,
                                    "# nanosandbox-mcp 0.3.3\n\nA stand-in for the version PyPI has.\n", license_text)
    print(path)


class Server:
    """An MCP server process spoken to over stdio, one JSON object a line."""

    def __init__(self, cmd, env=None):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.buf = b""
        self.lines = []

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self, want_id, timeout):
        """Return the reply with id want_id; every line must be JSON-RPC."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                self.lines.append(line)
                try:
                    msg = json.loads(line)
                except ValueError:
                    raise CheckError(f"stdout line is not JSON: {line[:200]!r}")
                if msg.get("jsonrpc") != "2.0":
                    raise CheckError(f"stdout line is not JSON-RPC 2.0: {line[:200]!r}")
                if msg.get("id") == want_id and "method" not in msg:
                    if "error" in msg:
                        raise CheckError(f"request {want_id} failed: {msg['error']}")
                    return msg["result"]
            left = deadline - time.monotonic()
            if left <= 0:
                raise CheckError(f"no reply to request {want_id} within {timeout}s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise CheckError(f"server closed stdout before replying to request {want_id} "
                                     f"(exit {self.proc.wait()})")
                self.buf += chunk

    def initialize(self, version=None):
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "nanosandbox-dist-test", "version": "1"}}})
        res = self.read(1, 120)
        info = res.get("serverInfo", {})
        if res.get("protocolVersion") != PROTOCOL_VERSION:
            raise CheckError(f"protocolVersion {res.get('protocolVersion')!r}, want {PROTOCOL_VERSION}")
        if info.get("name") != "nanosandbox-mcp":
            raise CheckError(f"serverInfo.name {info.get('name')!r}")
        if version is not None and info.get("version") != version:
            raise CheckError(f"serverInfo.version {info.get('version')!r}, want {version!r}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return info

    def close(self, timeout=30):
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        for line in rest.splitlines():
            json.loads(line)
        return self.proc.wait(timeout)


def roundtrip(cmd, version):
    srv = Server(cmd)
    try:
        info = srv.initialize(version)
        ok(f"initialize: {info['name']} {info.get('version')}, protocol {PROTOCOL_VERSION}")
        srv.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = [t["name"] for t in srv.read(2, 30)["tools"]]
        if tools != ["run_command"]:
            raise CheckError(f"tools/list gave {tools}, want ['run_command']")
        ok("tools/list: run_command")
        srv.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "run_command", "arguments": {"command": "echo", "args": ["hi"]}}})
        res = srv.read(3, 60)
        sc = res.get("structuredContent", {})
        if res.get("isError") or sc.get("exit_code") != 0 or sc.get("stdout") != "hi\n":
            raise CheckError(f"run_command echo hi gave {json.dumps(res)[:500]}")
        ok(f"tools/call run_command echo hi: exit_code 0, stdout 'hi\\n', {sc.get('duration_ms')} ms")
        code = srv.close()
        if code != 0:
            raise CheckError(f"server exited {code} after stdin closed, want 0")
        ok(f"stdin closed: server exited 0; all {len(srv.lines)} stdout lines JSON-RPC")
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()


def processes():
    """Return {pid: argv} of every process on this machine."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")[:-1]
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z":
            out[int(name)] = [a.decode(errors="replace") for a in argv]
    return out


def find(marker):
    """Pids whose argv holds marker as one argument."""
    return sorted(pid for pid, argv in processes().items() if marker in argv and pid != os.getpid())


def wait_for(cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def expect_nothing_left(marker, tag):
    if not wait_for(lambda: not find(marker), 10):
        left = {pid: processes().get(pid) for pid in find(marker)}
        raise CheckError(f"still running 10s after SIGTERM: {left}")
    ok(f"{tag}: nothing with {marker!r} in its argv is left running")


def sigterm(cmd, marker, also, tag, start):
    """Start cmd, let start() begin the long sleep, SIGTERM cmd, check."""
    proc = start(cmd)
    try:
        if not wait_for(lambda: any(argv[:1] == ["sleep"] for argv in
                                    (processes().get(p, []) for p in find(marker))), 60):
            raise CheckError(f"the sleep never started (looking for {marker!r})")
        ok(f"{tag}: sleep running in the sandbox; SIGTERM to pid {proc.pid} ({title(proc.pid)})")
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            raise CheckError(f"{cmd[0]} did not exit within 30s of SIGTERM")
        how = f"by signal {-code}" if code < 0 else f"with code {code}"
        ok(f"{tag}: pid {proc.pid} exited {how}")
        for m in [marker] + also:
            expect_nothing_left(m, tag)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for m in [marker] + also:
            for pid in find(m):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def title(pid):
    """The start of pid's command line (npm sets its own: "npm exec ...")."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            line = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
    return line if len(line) <= 60 else line[:57] + "..."


def long_sleep_args():
    # A duration no other process on the machine is likely to use, so the
    # scan of /proc finds only ours.
    return ["sleep", f"{300 + os.getpid() % 600}.{os.getpid() % 10}"]


def main(argv):
    # The server command follows the first "--" and may hold "--" itself.
    server = []
    if "--" in argv:
        i = argv.index("--")
        argv, server = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("binaries", "archives"):
        sub.add_parser(name).add_argument("dist")
    sub.add_parser("elf-machine").add_argument("file")
    sub.add_parser("targets")
    plat = sub.add_parser("platform")
    plat.add_argument("goos")
    plat.add_argument("goarch")
    sub.add_parser("npm-packages")
    sub.add_parser("roundtrip").add_argument("--version")
    sub.add_parser("next-version").add_argument("readme")
    rv = sub.add_parser("release-version")
    rv.add_argument("--tag")
    rv.add_argument("readme")
    rp = sub.add_parser("reproducible")
    rp.add_argument("dist_a")
    rp.add_argument("dist_b")
    rp.add_argument("subdirs", nargs="*")
    sub.add_parser("formula").add_argument("dist")
    mp = sub.add_parser("module-proxy")
    for a in ("root", "version", "out"):
        mp.add_argument(a)
    sw = sub.add_parser("standin-wheel")
    for a in ("goos", "goarch", "out"):
        sw.add_argument(a)
    lw = sub.add_parser("lint-workflows")
    lw.add_argument("--pins", default=os.path.join(os.path.dirname(PLATFORMS_JSON), "..", "..", "..", ".github", "action-pins.txt"))
    lw.add_argument("workflows", nargs="+")
    for name in ("sigterm-during-call", "sigterm-oneshot"):
        sub.add_parser(name).add_argument("--also", action="append", default=[],
                                          help="an argument of other processes that must be gone too")
    args = p.parse_args(argv)
    if args.cmd in ("roundtrip", "sigterm-during-call", "sigterm-oneshot") and not server:
        p.error(f"{args.cmd} needs -- CMD...")
    try:
        if args.cmd == "binaries":
            check_binaries(args.dist)
        elif args.cmd == "archives":
            check_archives(args.dist)
        elif args.cmd == "elf-machine":
            with open(args.file, "rb") as f:
                print(ELF_MACHINE_NAME.get(elf_info(f.read(64 << 10))[1], "unknown"))
        elif args.cmd == "targets":
            for p in read_platforms():
                print(f"{p['goos']}/{p['goarch']}")
        elif args.cmd == "platform":
            rows = [p for p in read_platforms() if (p["goos"], p["goarch"]) == (args.goos, args.goarch)]
            if len(rows) != 1:
                raise CheckError(f"{args.goos}/{args.goarch} is not in the platform table {PLATFORMS_JSON}")
            print(npm_package(rows[0]), ".".join(rows[0]["wheel_tags"]))
        elif args.cmd == "npm-packages":
            for name in sorted(npm_package(p) for p in read_platforms()):
                print(name)
        elif args.cmd == "roundtrip":
            roundtrip(server, args.version)
        elif args.cmd == "next-version":
            print(changelog_versions(args.readme)[0])
        elif args.cmd == "release-version":
            check_release_version(args.readme, args.tag)
        elif args.cmd == "reproducible":
            check_reproducible(args.dist_a, args.dist_b, args.subdirs)
        elif args.cmd == "formula":
            check_formula(args.dist)
        elif args.cmd == "module-proxy":
            make_module_proxy(args.root, args.version, args.out)
        elif args.cmd == "standin-wheel":
            standin_wheel(args.goos, args.goarch, args.out)
        elif args.cmd == "lint-workflows":
            lint_workflows(args.workflows, os.path.normpath(args.pins))
        elif args.cmd == "sigterm-during-call":
            sleep = long_sleep_args()

            def start(cmd):
                srv = Server(cmd)
                srv.initialize()
                srv.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                    "name": "run_command", "arguments": {"command": sleep[0], "args": sleep[1:]}}})
                return srv.proc

            sigterm(server, sleep[1], args.also, "SIGTERM during a tools/call", start)
        elif args.cmd == "sigterm-oneshot":
            sleep = long_sleep_args()
            sigterm(server, sleep[1], args.also, "SIGTERM during a one-shot command",
                    lambda cmd: subprocess.Popen(cmd + sleep, stdin=subprocess.DEVNULL))
    except CheckError as e:
        print(f"FAIL {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
