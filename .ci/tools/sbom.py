#!/usr/bin/env python3
"""Write the SBOM of one release archive: syft's SPDX JSON, made reproducible.

    python3 sbom.py ARCHIVE DOCUMENT

GoReleaser runs it for each archive (.goreleaser.yaml, sboms), from dist/.
syft, pinned and installed from the Go module proxy by .ci/dist-test and the
release workflow, must be on PATH. It catalogs the archive offline: no
enrichment from the network, no check for a newer syft. Standard library only.

Two fields of syft's output change from one run to the next:
creationInfo.created (the time it ran) and documentNamespace (which ends in a
random UUID). They become the time of the commit (SOURCE_DATE_EPOCH, which
GoReleaser sets from it) and a UUID derived from the archive's name and
sha256, so one archive always gets the same SBOM, byte for byte, and two
archives never share a namespace. The rest of syft's text is left as it
wrote it.
"""

import hashlib
import json
import os
import subprocess
import sys
import time
import uuid

# A namespace for uuid5, fixed here so that namespaces derived from the
# same archive agree wherever the SBOM is built.
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/nanosandbox/nanosandbox-mcp/sbom")


def main(argv):
    if len(argv) != 2:
        print("usage: sbom.py ARCHIVE DOCUMENT", file=sys.stderr)
        return 2
    archive, document = argv
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch or not epoch.isdigit():
        print(f"sbom.py: SOURCE_DATE_EPOCH is {epoch!r}, want the commit's time in seconds "
              "(GoReleaser knows no commit date in a repository without a remote)", file=sys.stderr)
        return 2
    env = dict(os.environ, SYFT_CHECK_FOR_APP_UPDATE="false", SYFT_FILE_METADATA_CATALOGER_ENABLED="true")
    try:
        subprocess.run(["syft", "scan", f"file:{archive}", "--quiet", "--output", f"spdx-json={document}"],
                       check=True, env=env)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"sbom.py: syft scan {archive}: {e}", file=sys.stderr)
        return 1

    with open(document, encoding="utf-8") as f:
        text = f.read()
    doc = json.loads(text)
    with open(archive, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    name = os.path.basename(archive)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))
    namespace = doc["documentNamespace"].rsplit("/", 1)[0] + f"/{name}-{uuid.uuid5(NAMESPACE, f'{name} {digest}')}"
    for old, new in ((doc["creationInfo"]["created"], created), (doc["documentNamespace"], namespace)):
        quoted = json.dumps(old)
        if text.count(quoted) != 1:
            print(f"sbom.py: {document}: {quoted} appears {text.count(quoted)} times, want once", file=sys.stderr)
            return 1
        text = text.replace(quoted, json.dumps(new))
    with open(document, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
