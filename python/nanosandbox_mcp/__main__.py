"""Start the nanosandbox-mcp binary installed with this package.

``python -m nanosandbox_mcp ARGS`` replaces this Python process with the
binary (os.execv), so no Python process stays between an MCP client and the
server: stdio, signals and the exit status are the binary's own.
"""

import os
import sys


def _drop_cwd(path):
    """Return sys.path without the directory python -m started in.

    python -m puts it first, and MCP clients start servers in the project,
    which commands write: a sysconfig.py there, or a package's metadata
    that names a file there, would be what this imports or runs. os and
    sys are loaded before any of it is read.
    """
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = None
    return [p for p in path if p not in ("", ".") and (cwd is None or os.path.realpath(p) != cwd)]


sys.path[:] = _drop_cwd(sys.path)

import sysconfig  # noqa: E402  (after the working directory is dropped)

NAME = "nanosandbox-mcp"


def _candidates():
    # The installer recorded where it put the binary: the most exact answer,
    # whatever the scheme (venv, --user, --prefix).
    try:
        from importlib import metadata

        for f in metadata.files(NAME) or ():
            if f.name == NAME:
                yield str(f.locate())
    except Exception:  # no metadata (e.g. run from a source tree)
        pass
    yield os.path.join(sysconfig.get_path("scripts"), NAME)
    yield os.path.join(os.path.dirname(sys.executable), NAME)
    try:
        user_scheme = sysconfig.get_preferred_scheme("user")  # Python 3.10+
    except AttributeError:
        user_scheme = os.name + "_user"
    try:
        yield os.path.join(sysconfig.get_path("scripts", user_scheme), NAME)
    except KeyError:
        pass


def find_binary():
    """Return the path of the installed binary, or None."""
    for path in _candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    binary = find_binary()
    if binary is None:
        sys.stderr.write(
            f"{NAME}: error: the {NAME} binary is not installed next to this Python ({sys.executable})\n"
            f"{NAME}: hint: reinstall the wheel for this platform: "
            f"pip install --force-reinstall {NAME}\n"
        )
        return 1
    os.execv(binary, [binary] + list(argv))
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
