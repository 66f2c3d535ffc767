#!/usr/bin/env bash
# docs/adding_an_op.md says which files one op touches. It stays true: every source path it names
# exists, and every file that names each kind of the Unary op (an exhaustive switch, which a new
# elementwise kind must join) is in its list for an elementwise op.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DOC=$SRC/docs/adding_an_op.md

test_every_path_the_guide_names_exists() {
  local missing=0 path
  # Backquoted paths with a folder: `compiler/ops/`, `runtime/kernels/unary_kernel.cpp`.
  while read -r path; do
    [ -e "$SRC/$path" ] || {
      echo "docs/adding_an_op.md names $path, which does not exist" >&2
      missing=1
    }
  done < <(grep -oE '`(compiler|runtime|tests|docs|cli|scripts)/[A-Za-z0-9_./{},-]*`' "$DOC" | tr -d '`' \
    | grep -v '[{}*]' | sort -u)
  ((missing == 0)) || fail "docs/adding_an_op.md names files that do not exist"
}

test_the_elementwise_list_has_every_file_that_switches_over_unary_kinds() {
  local values named file count switches=0 unlisted=()
  # The enum's values, and the kinds the sources name: equal, or the count below is stale.
  values=$(sed -n '/enum class UnaryKind/,/^};/p' "$SRC/runtime/format/tensor_kinds.h" | grep -cE '^\s*k[A-Za-z0-9]+ = ')
  named=$(grep -ohE 'UnaryKind::k[A-Za-z0-9]+' -r "$SRC/compiler" "$SRC/runtime" | sort -u | wc -l)
  ((values > 20)) || fail "found only $values UnaryKind values in runtime/format/tensor_kinds.h"
  ((named == values)) || fail "the sources name $named UnaryKinds, tensor_kinds.h declares $values"
  while read -r file; do
    count=$(grep -oE 'UnaryKind::k[A-Za-z0-9]+' "$file" | sort -u | wc -l)
    ((count == values)) || continue
    switches=$((switches + 1))
    grep -q "$(basename "$file")" "$DOC" || unlisted+=("${file#"$SRC"/}")
  done < <(grep -rlE 'UnaryKind::k' --include='*.cpp' --include='*.h' "$SRC/compiler" "$SRC/runtime" | sort)
  ((switches >= 2)) || fail "expected the kernel's and the cost model's switches over every UnaryKind, found $switches"
  ((${#unlisted[@]} == 0)) ||
    fail "these files name every UnaryKind but docs/adding_an_op.md does not list them: ${unlisted[*]}"
}

run_tests "$@"
