#!/usr/bin/env python3
"""Fails when a source file includes from a room above its own, or includes torch where it may not.

The floors, from the ground up (docs/architecture.md, "Layout"):

    core < text, constrain < proto, cache < worker, client < actors < router, gateway < cluster < tools

and inside worker/engine/, gateway/ and tools/, whose files all live in rooms:

    kernels < checkpoint < lora, sampling < model < cuda, reference
    common < zmq, openai
    common < loadtest, train, tokenizer_golden < soak, bench, gpu < cli

A file may include from its own room and from any room on a lower floor of the same house.
Rooms on the same floor are peers and do not include each other. A file outside a folder's rooms
may include from all of them (worker/serving_loop.cpp uses the engine), but a file inside a room
includes nothing of the folder around it (worker/engine/model/ includes nothing of worker/).

core/ is standard library only: no third-party header (anything with a '/' or a '.' in an
angle-bracket include), except the POSIX headers in POSIX_ALLOWED (core/secret_file.cpp reads a
file's owner group, which the C++ library cannot). Only worker/engine/reference/ and tools/train/ (and tests/) include torch:
<ATen/...>, <torch/...>, <c10/...>. tests/ may include anything and is not checked.

    tools/check_layers.py [REPO_ROOT]     exit 0: clean; 1: violations, one per line
"""
import os
import re
import sys

FLOORS = [["core"], ["text", "constrain"], ["proto", "cache"], ["worker", "client"], ["actors"],
          ["router", "gateway"], ["cluster"], ["tools"]]
# Folders split into rooms, each with its floors; "" is the repository root. A folder listed here
# holds rooms only: a source file directly in it, or a sub-folder not named, is a violation.
ROOMS = {
    "": FLOORS,
    "worker/engine": [["kernels"], ["checkpoint"], ["lora", "sampling"], ["model"], ["cuda", "reference"]],
    "gateway": [["common"], ["zmq", "openai"]],
    # tools/common: the flag reader, medians and text passages every program shares.
    "tools": [["common"], ["loadtest", "train", "tokenizer_golden"], ["soak", "bench", "gpu"], ["cli"]],
}
TORCH = ("ATen/", "torch/", "c10/")
POSIX_ALLOWED = ("sys/stat.h", "unistd.h")
TORCH_ALLOWED = ("worker/engine/reference/", "tools/train/")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh")


def level(folder, room):
    """The floor of `room` inside roomed `folder`, or None when the folder has no such room."""
    for i, floor in enumerate(ROOMS[folder]):
        if room in floor:
            return i
    return None


def order(folder):
    return " < ".join(", ".join(f) for f in ROOMS[folder])


def under(path, folder):
    """`path` (a file or folder, '/'-separated) lies inside `folder` ("" is the root)."""
    return folder == "" or path.startswith(folder + "/")


def room_of(path, folder):
    """The first folder of `path` below roomed `folder`, or None for a file directly in it."""
    rest = path[len(folder) + 1:] if folder else path
    return rest.split("/", 1)[0] if "/" in rest else None


def include_violation(rel, target):
    """Why `rel` may not include the project header `target`, or None."""
    for folder in sorted(ROOMS, key=len):  # outermost first
        src_in, dst_in = under(rel, folder), under(target, folder)
        if not src_in:
            continue
        if not dst_in:
            # Decided at an outer folder unless both sit in the same room there: then `target`
            # lies in the folder around this one's rooms.
            return f"{folder}/ includes \"{target}\" from the folder around its rooms " \
                   f"(its rooms use only each other, downward: {order(folder)})"
        src, dst = room_of(rel, folder), room_of(target, folder)
        if src is None or dst is None or src == dst:
            continue
        ls, ld = level(folder, src), level(folder, dst)
        if ls is None or ld is None:
            return None  # an unknown folder: reported by the walk (or not a room: tests/, ...)
        if ld >= ls:
            how = "a peer on the same floor" if ld == ls else "a floor above"
            where = f"{folder}/{src}" if folder else src
            return f"{where}/ includes \"{target}\" from {how} ({order(folder)})"
        return None
    return None


def file_violations(root, rel):
    top = rel.split("/", 1)[0]
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, target = m.groups()
            if kind == "<":
                if top == "core" and ("/" in target or "." in target) and target not in POSIX_ALLOWED:
                    yield f"{rel}:{lineno}: core/ is standard library only, but includes <{target}>"
                if target.startswith(TORCH) and not rel.startswith(TORCH_ALLOWED):
                    yield f"{rel}:{lineno}: includes <{target}>, but only " \
                          f"{', '.join(TORCH_ALLOWED)} and tests/ include torch"
                continue
            if "/" not in target or level("", target.split("/", 1)[0]) is None:
                continue
            why = include_violation(rel, target)
            if why:
                yield f"{rel}:{lineno}: {why}"


def violations(root):
    for folder, floors in ROOMS.items():
        if not folder:
            continue
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            if os.path.isdir(full) and level(folder, name) is None:
                yield f"{folder}/{name}/: not a room of {folder}/ ({order(folder)})"
            elif os.path.isfile(full) and name.endswith(SOURCES):
                yield f"{folder}/{name}: {folder}/ holds rooms only; put the file in one " \
                      f"({order(folder)})"
    for floor in FLOORS:
        for top in floor:
            for dirpath, dirnames, files in os.walk(os.path.join(root, top)):
                dirnames.sort()
                for name in sorted(files):
                    if name.endswith(SOURCES):
                        rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                        yield from file_violations(root, rel)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    found = list(violations(root))
    for v in found:
        print(v)
    if found:
        print(f"check_layers: {len(found)} violation(s): includes that point up or sideways, "
              f"torch outside its rooms, files outside the rooms", file=sys.stderr)
        return 1
    print("check_layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
