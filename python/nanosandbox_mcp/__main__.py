"""Start the nanosandbox-mcp binary installed with this package.

``python -m nanosandbox_mcp ARGS`` replaces this Python process with the
binary (os.execv), so no Python process stays between an MCP client and the
server: stdio, signals and the exit status are the binary's own.
"""

import os
import sys
import sysconfig

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
