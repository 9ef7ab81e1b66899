#!/usr/bin/env python3
"""Fails when a source file includes from a folder above its own.

The floors, from the ground up (docs/architecture.md, "Layout"):

    core < text < proto, cache < worker, client < actors < router, gateway < cluster < tools

A file may include from its own folder and from any folder on a lower floor. Folders on the same
floor are peers and do not include each other. core/ is standard library only: no third-party
header (anything with a '/' or a '.' in an angle-bracket include). tests/ may include anything.

    tools/check_layers.py [REPO_ROOT]     exit 0: clean; 1: violations, one per line
"""
import os
import re
import sys

FLOORS = [["core"], ["text"], ["proto", "cache"], ["worker", "client"], ["actors"], ["router", "gateway"],
          ["cluster"], ["tools"]]
LEVEL = {folder: i for i, floor in enumerate(FLOORS) for folder in floor}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = (".cpp", ".hpp", ".h", ".cc")


def violations(root):
    for top in LEVEL:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, target = m.groups()
                        if kind == "<":
                            if top == "core" and ("/" in target or "." in target):
                                yield f"{rel}:{lineno}: core/ is standard library only, " \
                                      f"but includes <{target}>"
                            continue
                        dest = target.split("/", 1)[0]
                        if "/" not in target or dest not in LEVEL or dest == top:
                            continue
                        if LEVEL[dest] >= LEVEL[top]:
                            how = "a peer on the same floor" if LEVEL[dest] == LEVEL[top] \
                                else "a floor above"
                            yield f"{rel}:{lineno}: {top}/ includes \"{target}\" from {how} " \
                                  f"({' < '.join(', '.join(f) for f in FLOORS)})"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    found = list(violations(root))
    for v in found:
        print(v)
    if found:
        print(f"check_layers: {len(found)} include(s) point up or sideways", file=sys.stderr)
        return 1
    print("check_layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
