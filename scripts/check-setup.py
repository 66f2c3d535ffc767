#!/usr/bin/python3
"""Proves that scripts/setup.sh installs everything a build reads, so a fresh Debian 12 builds it.

    scripts/check-setup.py BUILD_DIR [--setup FILE]

Lists every system file the build in BUILD_DIR (a Ninja build of this repository) read or uses:
  - headers, from the compiler's dependency files (`ninja -t deps`);
  - CMake files that configure read (the inputs of build.ninja's re-run rule: package configs,
    find modules);
  - paths in CMakeCache.txt (the compiler, libraries and include directories found);
  - libraries on the link lines (absolute paths and -l names resolved by the compiler);
  - the programs the build's commands start (compilers, compiler launchers, protoc, ar);
  - the shared libraries the built programs load (ldd);
  - the Python modules the tests import, as /usr/bin/python3 finds them.
It maps each file to its Debian package (dpkg -S) and fails unless every package is installed by
setup.sh (its apt-install.sh arguments, or FILE's) directly or through Depends/Pre-Depends, or is
part of a bare Debian 12 with a C++ toolchain (Priority required or important, and
build-essential with its Depends). Recommends do not count: apt-install.sh does not install them,
and neither does a CI machine. Each file and package that breaks the rule is named; exit 1 then,
2 on usage errors, 0 when the rule holds.

An alternative dependency (`a | b`) allows both a and b, as apt might pick either.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE_ROOTS = ["build-essential"]
BASELINE_PRIORITIES = {"required", "important"}
# Merged-/usr aliases: dpkg records some files under /lib, the build may name them under /usr/lib.
USR_MERGED = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
NOT_FILES = ("/proc/", "/sys/", "/dev/", "/tmp/")


def run(argv, check=True, **kwargs):
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if check and result.returncode != 0:
        sys.exit(f"check-setup: {' '.join(argv[:3])} ... failed:\n{result.stderr}")
    return result


def setup_packages(setup_file):
    """The packages setup.sh passes to apt-install.sh."""
    text = open(setup_file).read().replace("\\\n", " ")
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        for i, word in enumerate(words):
            if word.endswith("apt-install.sh"):
                return [w for w in words[i + 1:] if not w.startswith("-")]
    sys.exit(f"check-setup: {setup_file}: no apt-install.sh command found")


def dependency_closure(packages, with_recommends=False):
    """Every package reachable from packages through Depends and Pre-Depends (and Recommends)."""
    argv = ["apt-cache", "depends", "--recurse", "--no-suggests", "--no-conflicts", "--no-breaks",
            "--no-replaces", "--no-enhances"]
    if not with_recommends:
        argv.append("--no-recommends")
    closure = set()
    for line in run(argv + packages).stdout.splitlines():
        if line and not line.startswith(" "):
            name = line.strip()
            if not name.startswith("<"):
                closure.add(name.split(":")[0])
        else:
            match = re.match(r"\s*\|?(?:Depends|PreDepends|Recommends): (\S+)", line)
            if match and not match.group(1).startswith("<"):
                closure.add(match.group(1).split(":")[0])
    return closure


def baseline_packages():
    listing = run(["dpkg-query", "-W", "-f", "${Package} ${Priority}\n"]).stdout
    return [p for p, prio in (l.split() for l in listing.splitlines() if len(l.split()) == 2)
            if prio in BASELINE_PRIORITIES]


def ninja_paths(build, *tool):
    out = run(["ninja", "-C", build, "-t", *tool]).stdout
    return {l.strip().lstrip("| ").strip() for l in out.splitlines() if l.strip().lstrip("| ").startswith("/")}


def programs_run(build):
    """The programs the build's commands start: compilers, launchers, protoc, cmake, ar."""
    out = run(["ninja", "-C", build, "-t", "commands"]).stdout
    paths = set()
    for command in out.splitlines():
        for segment in re.split(r"&&|\|\||;", command):
            words = segment.split()
            if words and words[0] not in ("cd", ":", "true"):
                found = shutil.which(words[0])
                if found:
                    paths.add(found)
    return paths


def cache_paths(build):
    paths = set()
    for line in open(os.path.join(build, "CMakeCache.txt")):
        match = re.match(r"^[A-Za-z_][^:=]*:[A-Z]+=(.*)$", line.rstrip("\n"))
        if match:
            paths.update(v for v in match.group(1).split(";") if v.startswith("/"))
    return paths


def link_paths(build):
    compiler = run(["cmake", "-L", "-N", build]).stdout
    cxx = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.*)$", compiler, re.M)
    cxx = cxx.group(1) if cxx else "c++"
    paths = set()
    for line in open(os.path.join(build, "build.ninja")):
        if not line.strip().startswith(("LINK_LIBRARIES =", "LINK_PATH =")):
            continue
        for token in shlex.split(line.split("=", 1)[1]):
            if token.startswith("/"):
                paths.add(token)
            elif token.startswith("-l"):
                for suffix in (".so", ".a"):
                    found = run([cxx, f"-print-file-name=lib{token[2:]}{suffix}"]).stdout.strip()
                    if found.startswith("/"):
                        paths.add(os.path.normpath(found))
                        break
    return paths


def loaded_libraries(build):
    paths = set()
    for dirpath, _, files in os.walk(build):
        for name in files:
            path = os.path.join(dirpath, name)
            if not os.access(path, os.X_OK) or os.path.islink(path):
                continue
            try:
                with open(path, "rb") as f:
                    if f.read(4) != b"\x7fELF":
                        continue
            except OSError:  # a test's file that came and went while we walked
                continue
            for line in run(["ldd", path], check=False).stdout.splitlines():
                match = re.search(r"=> (/\S+)", line) or re.match(r"\s*(/\S+)", line)
                if match:
                    paths.add(match.group(1))
    return paths


def test_python_modules():
    """Where /usr/bin/python3 finds each top-level module that the tests import."""
    modules = set()
    for path in glob.glob(os.path.join(ROOT, "tests", "**", "*"), recursive=True):
        if path.endswith((".py", ".sh")):
            for line in open(path, errors="replace"):
                match = re.match(r"\s*(?:import|from) ([A-Za-z_]\w*)", line)
                if match:
                    modules.add(match.group(1))
    probe = ("import importlib.util, sys\n"
             "for m in sys.argv[1:]:\n"
             "    s = importlib.util.find_spec(m)\n"
             "    print(m, (s.origin or 'namespace') if s else '-')\n")
    out = run(["/usr/bin/python3", "-c", probe, *sorted(modules)]).stdout
    found, missing = set(), []
    for line in out.splitlines():
        module, origin = line.split(" ", 1)
        if origin.startswith("/"):
            found.add(origin)
        elif origin == "-":
            missing.append(module)
    return found, missing


def aliases(path):
    """path, its target if it is a link (an alternatives link, say), and their merged-/usr twins."""
    real = os.path.realpath(path)
    yield path
    yield real
    for p in (path, real):
        for top in USR_MERGED:
            if p.startswith(top + "/"):
                yield "/usr" + p
            if p.startswith("/usr" + top + "/"):
                yield p[len("/usr"):]


def owners(paths):
    """path -> set of packages; paths no package owns are absent."""
    candidates = {p: list(dict.fromkeys(aliases(p))) for p in paths}
    every = sorted({c for cs in candidates.values() for c in cs})
    owned = {}
    for i in range(0, len(every), 500):
        out = run(["dpkg", "-S", *every[i:i + 500]], check=False).stdout
        for line in out.splitlines():
            if line.startswith("diversion ") or ": " not in line:
                continue
            packages, path = line.split(": ", 1)
            owned.setdefault(path, set()).update(p.strip().split(":")[0] for p in packages.split(","))
    result = {}
    for path, cs in candidates.items():
        for c in cs:
            if c in owned:
                result[path] = owned[c]
                break
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--setup", default=os.path.join(ROOT, "scripts", "setup.sh"),
                        help="the setup script whose apt-install.sh packages are allowed")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    if not os.path.isfile(os.path.join(build, "build.ninja")):
        print(f"check-setup: {build}: not a Ninja build directory (scripts/build.sh makes one)",
              file=sys.stderr)
        return 2

    sources = {
        "compiler dependency file": ninja_paths(build, "deps"),
        "CMake configure input": ninja_paths(build, "query", "build.ninja"),
        "CMakeCache.txt": cache_paths(build),
        "link line": link_paths(build),
        "program the build runs": programs_run(build),
        "loaded by a built program": loaded_libraries(build),
    }
    python_files, missing_modules = test_python_modules()
    sources["Python module the tests import"] = python_files

    cache = open(os.path.join(build, "CMakeCache.txt")).read()
    source_dir = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache, re.M)
    inside = (ROOT + "/", build + "/") + ((source_dir.group(1) + "/",) if source_dir else ())
    read_by = {}
    for why, paths in sources.items():
        for path in paths:
            path = os.path.normpath(path)
            if path.startswith(inside) or path.startswith(NOT_FILES) or not os.path.exists(path):
                continue
            if os.path.isdir(path):
                continue
            read_by.setdefault(path, why)

    setup_name = (os.path.relpath(args.setup, ROOT) if os.path.abspath(args.setup).startswith(ROOT + "/")
                  else args.setup)
    roots = setup_packages(args.setup)
    allowed = dependency_closure(roots + BASELINE_ROOTS) | set(baseline_packages())
    with_recommends = dependency_closure(roots, with_recommends=True)
    owner = owners(read_by)

    problems = []
    for module in missing_modules:
        problems.append(f"Python module '{module}' imported by tests/ is not importable by /usr/bin/python3")
    for path in sorted(read_by):
        packages = owner.get(path)
        if not packages:
            problems.append(f"{path} ({read_by[path]}): belongs to no Debian package (installed by hand?)")
        elif not packages & allowed:
            package = sorted(packages)[0]
            how = ("only a Recommends of what setup.sh installs, which apt-install.sh skips"
                   if package in with_recommends else f"not installed by {setup_name}")
            problems.append(f"{path} ({read_by[path]}): package {package}: {how}")

    used = sorted({p for path in read_by for p in owner.get(path, ())})
    if problems:
        for problem in problems:
            print(f"check-setup: error: {problem}", file=sys.stderr)
        print(f"check-setup: {len(problems)} file(s) the build reads come from packages outside "
              f"{setup_name} and a bare Debian 12: add their packages there", file=sys.stderr)
        return 1
    print(f"check-setup: {len(read_by)} system files from {len(used)} packages, every one installed "
          f"by {setup_name} (directly or through Depends) or part of a bare "
          f"Debian 12 with a C++ toolchain")
    return 0


if __name__ == "__main__":
    sys.exit(main())
