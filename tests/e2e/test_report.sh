#!/usr/bin/env bash
# `ipucc compile --report FILE.html` (cli/compile_report.h, docs/report.md): one self-contained page
# with a tile memory map per IPU, the fullest tiles broken down, the largest tensors, the pipeline
# schedule and the cycle estimate, written also when the model does not fit. Each page is loaded
# in headless Chromium, which must take a screenshot and whose DOM must hold one cell per tile
# and the fullest tile's numbers.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SEQ=$MODELS/mlp_sequential.json
STAGED=$MODELS/mlp_sequential_staged.json
CHROMIUM=${CHROMIUM:-chromium}

# load_in_chromium PAGE: a screenshot of PAGE into PAGE.png and its DOM, as Chromium built it, into
# PAGE.dom.
load_in_chromium() {
  local page=$1
  command -v "$CHROMIUM" > /dev/null || fail "$CHROMIUM is not installed (scripts/setup.sh installs it)"
  local flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$E2E_TMP/chromium")
  timeout 120 "$CHROMIUM" "${flags[@]}" --window-size=1600,1200 --screenshot="$E2E_TMP/$page.png" \
    "file://$E2E_TMP/$page" > chromium.log 2>&1 || fail "chromium could not screenshot $page: $(tail -n 5 chromium.log)"
  timeout 120 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$E2E_TMP/$page" > "$page.dom" 2> chromium.log ||
    fail "chromium could not load $page: $(tail -n 5 chromium.log)"
  "$PYTHON" - "$page.png" <<'PY' || fail "$page.png is not a screenshot"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (1600, 1200), (width, height)
assert len(data) > 10000, f"{len(data)} bytes: a blank page"
PY
}

# check_dom PAGE TILES TILE BYTES: PAGE.dom holds TILES tile cells, and its first fullest-tile row
# (the fullest tile of IPU 0) is tile TILE with BYTES bytes, as is that tile's cell.
check_dom() {
  "$PYTHON" - "$@" <<'PY' || fail "the DOM of $1 is not the report expected"
import html.parser, sys
page, tiles, tile, peak = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.cells, self.fullest, self.row, self.text = {}, [], None, []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "i" and "tile" in classes:
            self.cells[a["data-tile"]] = int(a["data-bytes"])
        if tag == "tr" and "fullest-tile" in classes:
            self.row = [a["data-tile"], int(a["data-bytes"]), ""]
            self.fullest.append(self.row)
    def handle_endtag(self, tag):
        if tag == "tr":
            self.row = None
    def handle_data(self, data):
        if self.row is not None:
            self.row[2] += data + "|"
dom = Dom()
dom.feed(open(page + ".dom", encoding="utf-8").read())
assert len(dom.cells) == tiles, f"{len(dom.cells)} tile cells, expected {tiles}"
assert dom.fullest, "no fullest-tile rows"
first_tile, first_bytes, text = dom.fullest[0]
assert (first_tile, first_bytes) == (tile, int(peak)), (first_tile, first_bytes, tile, peak)
assert dom.cells[tile] == int(peak), (dom.cells[tile], peak)
assert max(dom.cells.values()) == int(peak), "a cell holds more than the fullest tile"
# The row shows the numbers as the compile prints them.
assert f"{tile}|{int(peak):,}|" in text, text
PY
}

test_a_fitting_compile_draws_every_tile_of_every_ipu() {
  expect_exit 0 "$IPUCC" compile "$STAGED" --gradient-accumulation 4 --steps-per-execution 4 --no-cache --json \
    --report report.html
  expect_file report.html
  local tiles ipus fullest peak
  tiles=$(json_get "$STDOUT" 'd["target"]["tiles_per_ipu"]')
  ipus=$(json_get "$STDOUT" 'd["pipeline"]["stages"]')
  fullest=$(json_get "$STDOUT" 'd["estimates"]["fullest_tile"]')
  peak=$(json_get "$STDOUT" 'd["estimates"]["peak_tile_bytes"]')
  expect_eq "$ipus" 2 "IPUs of the staged model"
  load_in_chromium report.html
  "$PYTHON" - "$fullest" "$tiles" <<'PY' || fail "the fullest tile must be on IPU 0 for this check"
import sys
assert int(sys.argv[1]) < int(sys.argv[2])
PY
  check_dom report.html "$((tiles * ipus))" "$fullest" "$peak"
  grep -q 'id="ipu-1"' report.html.dom || fail "no section for IPU 1"
  # Memory over the program, per IPU, peaks at that IPU's fullest tile.
  "$PYTHON" - report.html.dom <<'PY' || fail "the liveness charts do not peak at the fullest tiles"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
peaks = dict(re.findall(r'class="liveness" data-ipu="(\d+)" data-peak="(\d+)"', dom))
fullest = re.findall(r'<section class="ipu" id="ipu-(\d+)">.*?class="fullest-tile" data-tile="\d+" data-bytes="(\d+)"', dom, re.S)
assert len(peaks) == 2 and len(fullest) == 2, (peaks, fullest)
for ipu, bytes in fullest:
    assert peaks[ipu] == bytes, (ipu, peaks[ipu], bytes)
PY
  grep -q '<h2>Pipeline schedule</h2>' report.html.dom || fail "no pipeline schedule"
  grep -q '<h2>Estimated cycles per step</h2>' report.html.dom || fail "no cycle estimate"
  grep -q 'dense1/kernel' report.html.dom || fail "the largest tensors are not named"
  grep -q '; fits</p>' report.html.dom || fail "the report does not say the model fits"
  # The colours follow the plan: its fullest tile is the darkest step, though it is a few per cent
  # of a tile (a page coloured against the capacity was one pale block).
  grep -q "<i class=\"tile b9\" data-tile=\"$fullest\"" report.html.dom || fail "the fullest tile is not the darkest"
  # The schedule adds up to the cycle table: its heading's total is the train program's cycles per
  # step times the update's 4 micro-batches, host transfers included.
  local per_step heading
  per_step=$(json_get "$STDOUT" 'd["estimates"]["cycles_per_step"]["train"]')
  heading=$(grep -o 'micro-batches per update, [0-9]* cycles' report.html.dom | grep -o '[0-9]* cycles')
  "$PYTHON" - "$per_step" "$heading" <<'PY' || fail "the schedule's total ($heading) is not 4 x $per_step"
import sys
total = int(sys.argv[2].split()[0])
assert abs(total - 4 * int(sys.argv[1])) <= 4, (total, sys.argv[1])
PY
  # Unpipelined, the slots leave out the host streams: the schedule draws them, so its total is
  # still the program's.
  expect_exit 0 "$IPUCC" compile "$SEQ" --no-cache --json --report seq.html
  per_step=$(json_get "$STDOUT" 'd["estimates"]["cycles_per_step"]["train"]')
  grep -q "micro-batches per update, $per_step cycles" seq.html || fail "the schedule's total is not $per_step"
  grep -q '<title>host transfers: [0-9,]* cycles</title>' seq.html || fail "the host transfers are not drawn"
}

# The page reads at the widths engineers' screens have, the tile memory and the schedule side by
# side with nothing wider than the window, and prints whole on a portrait page, one column.
test_the_page_reads_at_1280_to_1920_pixels_and_prints_whole() {
  expect_exit 0 "$IPUCC" compile "$STAGED" --gradient-accumulation 4 --steps-per-execution 4 --no-cache \
    --report report.html
  local width
  for width in 1280 1920; do
    timeout 120 "$PYTHON" "$E2E_LIB_DIR/chromium_layout.py" "$CHROMIUM" report.html "$width" \
      "#memory" "#time" "#schedule svg" > "layout-$width.json" || fail "chromium could not lay out the page at $width px"
    expect_json "layout-$width.json" 'd["scroll_width"] <= d["width"]' "nothing wider than $width px"
    expect_json "layout-$width.json" 'd["#time"][0] >= d["#memory"][2]' "two columns at $width px"
    expect_json "layout-$width.json" 'd["#schedule svg"][2] <= d["width"]' "the whole schedule in view at $width px"
  done
  # The ops table sorted by cycles shows until a column's header picks another order.
  timeout 120 "$PYTHON" "$E2E_LIB_DIR/chromium_layout.py" "$CHROMIUM" report.html 1280 \
    "#ops-by-cycles" "#ops-by-tiles" > ops.json || fail "chromium could not lay out the page"
  expect_json ops.json 'd["#ops-by-cycles"][3] > d["#ops-by-cycles"][1] and d["#ops-by-tiles"][3] == 0' \
    "the table by cycles shown, the others hidden"
  timeout 120 "$PYTHON" "$E2E_LIB_DIR/chromium_layout.py" "$CHROMIUM" "report.html#ops-by-tiles" 1280 \
    "#ops-by-cycles" "#ops-by-tiles" > ops_by_tiles.json || fail "chromium could not lay out the page"
  expect_json ops_by_tiles.json 'd["#ops-by-tiles"][3] > d["#ops-by-tiles"][1] and d["#ops-by-cycles"][3] == 0' \
    "the table by tiles shown once chosen"
  timeout 120 "$PYTHON" "$E2E_LIB_DIR/chromium_layout.py" "$CHROMIUM" report.html 720 --print \
    "#memory" "#time" > print.json || fail "chromium could not lay out the page for print"
  expect_json print.json 'd["scroll_width"] <= d["width"]' "a printed page no wider than the paper"
  expect_json print.json 'd["#time"][1] >= d["#memory"][3]' "one column in print"
}

test_a_compile_that_does_not_fit_writes_the_report_then_fails_as_before() {
  expect_error 5 "tile(s) out of memory" -- "$IPUCC" compile "$SEQ" --tiles-per-ipu 2 --bytes-per-tile 4096 \
    --report oom.html -o never.ipuexe
  expect_no_file never.ipuexe
  expect_file oom.html
  local first tile bytes
  first=$(grep -m 1 -E '^\s+tile [0-9]+ needs' "$STDERR")
  tile=$(sed -E 's/^\s+tile ([0-9]+) needs.*/\1/' <<< "$first")
  bytes=$(sed -E 's/^\s+tile [0-9]+ needs ([0-9,]+) bytes.*/\1/' <<< "$first" | tr -d ,)
  load_in_chromium oom.html
  check_dom oom.html 2 "$tile" "$bytes"
  grep -q 'does not fit: 2 tile(s) out of memory' oom.html.dom || fail "the report does not say what failed"
  grep -q 'class="tile over"' oom.html.dom || fail "no tile is drawn as over capacity"
  # With --json too: the same report, and the plan in the object.
  expect_error 5 "tile(s) out of memory" -- "$IPUCC" compile "$SEQ" --tiles-per-ipu 2 --bytes-per-tile 4096 \
    --report oom_json.html --json
  expect_file oom_json.html
  expect_json "$STDOUT" 'd["fits"] is False and d["memory"]["overflowing_tiles"] == 2'
}

# The report needs the memory plan, which only a compile gives: a cached model is compiled again.
test_a_cached_model_still_gets_the_whole_report() {
  expect_exit 0 "$IPUCC" compile "$SEQ" --tiles-per-ipu 16
  expect_exit 0 "$IPUCC" compile "$SEQ" --tiles-per-ipu 16 --report cached.html
  expect_exit 0 "$PYTHON" -c "
text = open('cached.html', encoding='utf-8').read()
assert text.count('<i class=\"tile ') == 16, text.count('<i class=\"tile ')
assert 'fullest-tile' in text"
}

run_tests "$@"
