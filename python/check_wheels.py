#!/usr/bin/env python3
"""Verify wheels built by build_wheels.py (standard library only).

    python3 python/check_wheels.py [--all] WHEEL_OR_DIR...

For each wheel: the file name parses, its tags are the ones DESIGN.md §6
gives, WHEEL lists exactly those tags, METADATA is core metadata 2.4 with the
same version, an SPDX License-Expression and its License-File in
.dist-info/licenses/ (and no License field or license classifier, which PyPI
refuses beside an expression),
RECORD lists every other entry once with the right sha256 and size, modes are
0755 for the binary and 0644 for the rest, no path escapes the install root,
and the binary is built for the CPU and OS its tags claim (static ELF on
Linux, Mach-O on macOS). With --all, exactly one wheel per platform.
"""

import argparse
import base64
import csv
import email.parser
import hashlib
import io
import os
import re
import struct
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_wheels  # noqa: E402

NAME = build_wheels.NAME
DIST_NAME = build_wheels.DIST_NAME
# platform tag in the file name -> (goos, goarch)
EXPECTED = {".".join(tags): key for key, tags in build_wheels.PLATFORM_TAGS.items()}
ELF_MACHINE = {"amd64": 62, "arm64": 183}
MACHO_CPU = {"amd64": 0x01000007, "arm64": 0x0100000C}
PT_DYNAMIC, PT_INTERP = 2, 3

_FILENAME = re.compile(r"^(?P<name>[^-]+)-(?P<ver>[^-]+)-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


class CheckError(Exception):
    pass


def check_binary(data, goos, goarch):
    """Fail unless data is an executable for goos/goarch; return a description."""
    if goos == "linux":
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise CheckError("binary is not a 64-bit little-endian ELF file")
        e_machine, e_phoff = struct.unpack_from("<H", data, 18)[0], struct.unpack_from("<Q", data, 32)[0]
        e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
        if e_machine != ELF_MACHINE[goarch]:
            raise CheckError(f"binary is ELF machine {e_machine}, want {ELF_MACHINE[goarch]} ({goarch})")
        types = [struct.unpack_from("<I", data, e_phoff + i * e_phentsize)[0] for i in range(e_phnum)]
        if PT_INTERP in types or PT_DYNAMIC in types:
            raise CheckError("binary is dynamically linked (PT_INTERP or PT_DYNAMIC); the tags need a static one")
        return f"static ELF {goarch}"
    magic, cputype = struct.unpack_from("<II", data, 0)
    if magic != 0xFEEDFACF:
        raise CheckError("binary is not a 64-bit Mach-O file")
    if cputype != MACHO_CPU[goarch]:
        raise CheckError(f"binary is Mach-O cputype {cputype:#x}, want {MACHO_CPU[goarch]:#x} ({goarch})")
    return f"Mach-O {goarch}"


def check_wheel(path):
    """Verify one wheel; return (platform key, one-line summary)."""
    base = os.path.basename(path)
    m = _FILENAME.match(base)
    if not m:
        raise CheckError(f"{base}: not a wheel file name")
    if m["name"] != DIST_NAME:
        raise CheckError(f"{base}: distribution {m['name']!r}, want {DIST_NAME!r}")
    if (m["py"], m["abi"]) != (build_wheels.PYTHON_TAG, build_wheels.ABI_TAG):
        raise CheckError(f"{base}: tags {m['py']}-{m['abi']}, want py3-none")
    if m["plat"] not in EXPECTED:
        raise CheckError(f"{base}: platform tag {m['plat']!r} is not one of {sorted(EXPECTED)}")
    goos, goarch = EXPECTED[m["plat"]]
    version = m["ver"]
    info_dir = f"{DIST_NAME}-{version}.dist-info"
    binary_path = f"{DIST_NAME}-{version}.data/scripts/{NAME}"

    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        if len(names) != len(set(names)):
            raise CheckError(f"{base}: duplicate entries")
        for n in names:
            if n.startswith("/") or ".." in n.split("/") or "\\" in n:
                raise CheckError(f"{base}: entry {n!r} escapes the install root")
            top = n.split("/")[0]
            if top not in ("nanosandbox_mcp", info_dir, f"{DIST_NAME}-{version}.data"):
                raise CheckError(f"{base}: unexpected entry {n!r}")
        license_path = f"{info_dir}/licenses/{build_wheels.LICENSE_FILE}"
        for required in ("nanosandbox_mcp/__init__.py", "nanosandbox_mcp/__main__.py", binary_path,
                         f"{info_dir}/METADATA", f"{info_dir}/WHEEL", f"{info_dir}/RECORD", license_path):
            if required not in names:
                raise CheckError(f"{base}: missing {required}")

        # Modes: the binary must stay executable once installed.
        for i in infos:
            mode = i.external_attr >> 16
            want = 0o100755 if i.filename == binary_path else 0o100644
            if i.create_system != 3 or mode != want:
                raise CheckError(f"{base}: {i.filename} has mode {mode:o} (system {i.create_system}), want {want:o}")

        # WHEEL
        wheel = email.parser.Parser().parsestr(zf.read(f"{info_dir}/WHEEL").decode("utf-8"))
        if wheel["Wheel-Version"] != "1.0" or wheel["Root-Is-Purelib"] != "false":
            raise CheckError(f"{base}: WHEEL has Wheel-Version {wheel['Wheel-Version']}, "
                             f"Root-Is-Purelib {wheel['Root-Is-Purelib']}")
        tags = sorted(wheel.get_all("Tag") or [])
        want_tags = sorted(f"py3-none-{t}" for t in m["plat"].split("."))
        if tags != want_tags:
            raise CheckError(f"{base}: WHEEL tags {tags}, want {want_tags}")

        # METADATA
        meta = email.parser.Parser().parsestr(zf.read(f"{info_dir}/METADATA").decode("utf-8"))
        for field, want in (("Metadata-Version", build_wheels.METADATA_VERSION), ("Name", NAME), ("Version", version),
                            ("License-Expression", build_wheels.LICENSE_EXPRESSION),
                            ("Description-Content-Type", "text/markdown")):
            if meta[field] != want:
                raise CheckError(f"{base}: METADATA {field} {meta[field]!r}, want {want!r}")
        if (meta.get_all("License-File") or []) != [build_wheels.LICENSE_FILE]:
            raise CheckError(f"{base}: METADATA License-File {meta.get_all('License-File')}, "
                             f"want [{build_wheels.LICENSE_FILE!r}]")
        if "License" in meta:
            raise CheckError(f"{base}: METADATA has a License field beside License-Expression")
        classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
        if classifiers:
            raise CheckError(f"{base}: METADATA has license classifiers beside License-Expression: {classifiers}")
        if not zf.read(license_path).strip():
            raise CheckError(f"{base}: {license_path} is empty")
        if len(meta.get_payload().strip()) < 100:
            raise CheckError(f"{base}: METADATA has no long description")
        init = zf.read("nanosandbox_mcp/__init__.py").decode("utf-8")
        if f'__version__ = "{version}"' not in init:
            raise CheckError(f"{base}: nanosandbox_mcp/__init__.py is not stamped with {version}")

        # RECORD: every entry but RECORD itself, once, with hash and size.
        rows = list(csv.reader(io.StringIO(zf.read(f"{info_dir}/RECORD").decode("utf-8"))))
        listed = {}
        for row in rows:
            if len(row) != 3:
                raise CheckError(f"{base}: RECORD row {row!r} has {len(row)} fields")
            if row[0] in listed:
                raise CheckError(f"{base}: RECORD lists {row[0]} twice")
            listed[row[0]] = row
        if set(listed) != set(names):
            raise CheckError(f"{base}: RECORD lists {sorted(set(listed) ^ set(names))} differently from the zip")
        for n in names:
            _, digest, size = listed[n]
            if n == f"{info_dir}/RECORD":
                if digest or size:
                    raise CheckError(f"{base}: RECORD's own row must have no hash or size")
                continue
            data = zf.read(n)
            algo, _, b64 = digest.partition("=")
            if algo != "sha256":
                raise CheckError(f"{base}: RECORD hash of {n} is {algo or 'missing'}, want sha256")
            got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if b64 != got:
                raise CheckError(f"{base}: RECORD hash of {n} does not match its content")
            if size != str(len(data)):
                raise CheckError(f"{base}: RECORD size of {n} is {size}, content has {len(data)} bytes")

        what = check_binary(zf.read(binary_path), goos, goarch)
    return (goos, goarch), f"{base}: {len(names)} entries, RECORD ok, tags ok, binary 0755 {what}"


def wheels_in(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, n) for n in os.listdir(p) if n.endswith(".whl"))
        else:
            out.append(p)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--all", action="store_true", help="require exactly one wheel per platform")
    p.add_argument("paths", nargs="+", metavar="WHEEL_OR_DIR")
    args = p.parse_args(argv)
    seen = {}
    try:
        wheels = wheels_in(args.paths)
        if not wheels:
            raise CheckError("no wheels found")
        for w in wheels:
            key, summary = check_wheel(w)
            if key in seen:
                raise CheckError(f"two wheels for {key[0]}/{key[1]}: {seen[key]} and {w}")
            seen[key] = w
            print(f"  ok  {summary}")
        if args.all and set(seen) != set(build_wheels.PLATFORM_TAGS):
            missing = set(build_wheels.PLATFORM_TAGS) - set(seen)
            raise CheckError(f"no wheel for {', '.join('/'.join(k) for k in sorted(missing))}")
        versions = {os.path.basename(w).split("-")[1] for w in wheels}
        if len(versions) != 1:
            raise CheckError(f"wheels disagree on the version: {sorted(versions)}")
    except (CheckError, zipfile.BadZipFile, KeyError, struct.error) as e:
        print(f"FAIL {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
