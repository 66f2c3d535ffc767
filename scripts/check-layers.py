#!/usr/bin/env python3
"""The layering law of ARCHITECTURE.md, checked (the `layering` test).

ARCHITECTURE.md's folder table says, for each folder, which folders it may depend on. This script
fails unless
  1. the table's dependencies have no cycle;
  2. every `#include "runtime/...|compiler/...|cache/...|cli/..."` in a folder's sources names a
     header of that folder or of one it may reach through the table (dependencies are
     transitive: compiler/ops may include runtime/format because ir may);
  3. the CMake targets defined under runtime/, cache/, compiler/ and cli/ link exactly the table's
     dependencies: the folders linked by a folder's targets (target_link_libraries, parsed from
     the CMakeLists.txt files; a target belongs to the folder of its sources) equal its row.

Words of a "may depend on" cell that name no folder (OpenSSL, libonnx, ...) are external
libraries and are not checked. A word names a folder relative to the row's own top folder first
("ir" in a compiler/ row is compiler/ir), then from the root ("cache", "runtime/data").

Usage: check-layers.py [SOURCE_ROOT]   (default: the checkout this script is in)
"""
import os
import re
import sys

SOURCE_TOPS = ("runtime", "compiler", "cache", "compile_cache", "cli")
SOURCE_EXTENSIONS = (".h", ".cpp", ".cc", ".def", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:' + "|".join(SOURCE_TOPS) + r')/[^"]+)"')
TARGET_KEYWORDS = {"STATIC", "SHARED", "MODULE", "INTERFACE", "OBJECT", "EXCLUDE_FROM_ALL", "ALIAS", "IMPORTED"}
LINK_KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE"}


def read_table(root):
    """{folder: set of folders it may depend on} from ARCHITECTURE.md's '## Folders' table."""
    rows = {}
    in_folders = False
    with open(os.path.join(root, "ARCHITECTURE.md"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_folders = line.strip() == "## Folders"
                continue
            if not in_folders or not line.startswith("| `"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if len(cells) != 3:
                sys.exit(f"ARCHITECTURE.md: a folder row without three cells: {line.strip()}")
            rows[cells[0].strip("`")] = cells[2]
    if not rows:
        sys.exit("ARCHITECTURE.md: no '## Folders' table found")
    table = {}
    for folder, cell in rows.items():
        deps = set()
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_/]*", cell):
            top = folder.split("/")[0]
            for candidate in (f"{top}/{word}", word, f"runtime/{word}", f"compiler/{word}"):
                if candidate in rows and candidate != folder:
                    deps.add(candidate)
                    break
        table[folder] = deps
    return table


def find_cycle(table):
    state = {}

    def visit(folder, path):
        state[folder] = "open"
        for dep in sorted(table[folder]):
            if state.get(dep) == "open":
                return path + [folder, dep]
            if dep not in state:
                cycle = visit(dep, path + [folder])
                if cycle:
                    return cycle
        state[folder] = "done"
        return None

    for folder in sorted(table):
        if folder not in state:
            cycle = visit(folder, [])
            if cycle:
                return cycle[cycle.index(cycle[-1]):]
    return None


def reachable(table, folder):
    seen, stack = set(), list(table[folder])
    while stack:
        dep = stack.pop()
        if dep not in seen:
            seen.add(dep)
            stack.extend(table[dep])
    return seen


def owner(folders, path):
    """The table folder holding `path` (the longest that is a prefix), or None."""
    best = None
    for folder in folders:
        if path.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def check_includes(root, table):
    problems, files, includes = [], 0, 0
    for top in SOURCE_TOPS:
        for directory, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_EXTENSIONS):
                    continue
                path = os.path.relpath(os.path.join(directory, name), root)
                folder = owner(table, path)
                if folder is None:
                    problems.append(f"{path}: in no folder of ARCHITECTURE.md's table")
                    continue
                files += 1
                allowed = reachable(table, folder) | {folder}
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        includes += 1
                        header = match.group(1)
                        used = owner(table, header)
                        if used is None:
                            problems.append(f"{path}:{number}: includes {header}, in no folder of the table")
                        elif used not in allowed:
                            problems.append(f"{path}:{number}: includes {header}: {folder} may not depend on {used} "
                                            f"(it may use {', '.join(sorted(allowed - {folder})) or 'nothing'})")
    return problems, files, includes


def cmake_commands(text):
    """(command, [arguments]) of a CMakeLists.txt, comments removed."""
    text = re.sub(r"#[^\n]*", "", text)
    for match in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", text):
        depth, i = 1, match.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield match.group(1).lower(), re.findall(r'"[^"]*"|[^\s()]+', text[match.end():i - 1])


def cmake_graph(root, table):
    """{folder: set of folders its targets link}, and problems."""
    targets, links, problems = {}, [], []
    for top in SOURCE_TOPS:
        for directory, _, names in os.walk(os.path.join(root, top)):
            if "CMakeLists.txt" not in names:
                continue
            listfile = os.path.join(directory, "CMakeLists.txt")
            here = os.path.relpath(directory, root)
            with open(listfile, encoding="utf-8") as f:
                for command, args in cmake_commands(f.read()):
                    if command in ("add_library", "add_executable") and args:
                        sources = [a for a in args[1:] if a not in TARGET_KEYWORDS and "$" not in a]
                        folders = {owner(table, os.path.normpath(os.path.join(here, s))) for s in sources}
                        if not sources:
                            folders = {owner(table, here + "/CMakeLists.txt")}
                        if len(folders) != 1 or None in folders:
                            problems.append(f"{here}/CMakeLists.txt: target {args[0]} has sources in "
                                            f"{sorted(str(f) for f in folders)}: one folder per target")
                            continue
                        targets[args[0]] = folders.pop()
                    elif command == "target_link_libraries" and args:
                        links.append((args[0], [a for a in args[1:] if a not in LINK_KEYWORDS]))
    graph = {folder: set() for folder in table}
    for target, items in links:
        if target not in targets:
            continue
        for item in items:
            if item in targets and targets[item] != targets[target]:
                graph[targets[target]].add(targets[item])
    built = set(targets.values())
    return graph, built, targets, problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    table = read_table(root)
    problems = []
    cycle = find_cycle(table)
    if cycle:
        problems.append("ARCHITECTURE.md: the table has a cycle: " + " -> ".join(cycle))
    include_problems, files, includes = check_includes(root, table)
    problems += include_problems
    graph, built, targets, cmake_problems = cmake_graph(root, table)
    problems += cmake_problems
    for folder in sorted(built):
        if graph[folder] != table[folder]:
            extra, missing = graph[folder] - table[folder], table[folder] - graph[folder]
            text = []
            if extra:
                text.append("links " + ", ".join(sorted(extra)) + " that the table does not list")
            if missing:
                text.append("the table lists " + ", ".join(sorted(missing)) + " that no target links")
            problems.append(f"{folder}: CMake and ARCHITECTURE.md differ: " + "; ".join(text))
    if problems:
        for problem in problems:
            print("layering: " + problem, file=sys.stderr)
        print(f"layering: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"layering: {includes} includes in {files} files keep to ARCHITECTURE.md's table; "
          f"{len(targets)} CMake targets link exactly its edges:")
    for folder in sorted(built):
        names = sorted(t for t, f in targets.items() if f == folder)
        print(f"  {folder} ({', '.join(names)}) -> {', '.join(sorted(table[folder])) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
