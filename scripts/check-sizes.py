#!/usr/bin/env python3
"""The size limits of the source folders, checked (the `source_sizes` test).

A file over 600 lines, or a function over 120, is usually several things that were never named:
the limit makes the next change to it start by naming them. This script fails, naming each file
and function, unless every .h and .cpp under runtime/, compiler/, cache/, compile_cache/ and
cli/ holds at most MAX_FILE_LINES lines and every function defined at namespace scope in them
spans at most MAX_FUNCTION_LINES lines, from the line that opens its signature to its closing
brace.

A function is found as the project's clang-format lays one out: a signature starting in column 0
and its body closed by a `}` in column 0. A method defined inside a class body is indented: it is
found by a line that starts a declaration (the line before ends one, opens or closes a block, or
is a comment), names something, holds its parameter list and opens the body, whose `}` comes at
the same indentation. A lambda is measured as part of the function it is written in. Generated
files (the build tree's protobuf sources) are not under these folders.

Usage: check-sizes.py [SOURCE_ROOT]   (default: the checkout this script is in)
"""
import os
import re
import sys

SOURCE_TOPS = ("runtime", "compiler", "cache", "compile_cache", "cli")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 120

# A column-0 line that opens a definition: not a comment, preprocessor line, namespace, type,
# or the closing brace itself.
NOT_A_SIGNATURE = re.compile(r"^(\s|//|/\*|\*|#|}|namespace\b|class\b|struct\b|enum\b|union\b|using\b|template\s*<[^>]*>\s*$)")


def functions(lines):
    """(name line, first line number, line count) of each column-0 function in LINES."""
    start = None
    for number, line in enumerate(lines, 1):
        if start is None:
            if line.strip() and not NOT_A_SIGNATURE.match(line) and "(" in line:
                start = number
                if line.rstrip().endswith(";"):
                    start = None
        elif line.startswith("}"):
            yield lines[start - 1].strip(), start, number - start + 1
            start = None
        elif line.strip() and not line[0].isspace() and not line.startswith(("//", "#")):
            # Another column-0 line before a closing brace: START was a declaration or a
            # statement split over lines, not a definition.
            start = None if line.rstrip().endswith(";") else number


# An indented line that opens a definition's body: a name (not a statement keyword), a parameter
# list, qualifiers, `{`. Continuation lines of a condition or a call are told apart by the line
# before them (in_class_methods).
IN_CLASS_DEFINITION = re.compile(
    r"^( +)(?!(?:if|for|while|switch|else|do|try|catch|return|case|default)\b)[A-Za-z_~][^;=]*\)\s*"
    r"(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?(?:final\s*)?(?:->\s*[\w:<>, ]+\s*)?\{\s*$")


def in_class_methods(lines):
    """(signature, first line number, line count) of each method defined inside a class body."""
    previous = ""
    for index, line in enumerate(lines):
        opens = IN_CLASS_DEFINITION.match(line)
        starts_declaration = previous.rstrip().endswith((";", "{", "}", ":")) or previous.lstrip().startswith("//")
        if opens and starts_declaration:
            indent = opens.group(1)
            for end in range(index + 1, len(lines)):
                if lines[end].startswith(indent + "}"):
                    yield line.strip(), index + 1, end - index + 1
                    break
                if lines[end].strip() and not lines[end].startswith(indent):
                    break  # left the block: not a definition after all
        if line.strip():
            previous = line


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = []
    for top in SOURCE_TOPS:
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(directory, name)
                shown = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as f:
                    lines = f.read().split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                if len(lines) > MAX_FILE_LINES:
                    problems.append(f"{shown}: {len(lines)} lines (at most {MAX_FILE_LINES})")
                for signature, first, count in [*functions(lines), *in_class_methods(lines)]:
                    if count > MAX_FUNCTION_LINES:
                        problems.append(f"{shown}:{first}: a function of {count} lines "
                                        f"(at most {MAX_FUNCTION_LINES}): {signature}")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-sizes: {len(problems)} over the limits: split them along their seams "
              "(ARCHITECTURE.md names the files)")
        return 1
    print("check-sizes: every file and function within the limits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
