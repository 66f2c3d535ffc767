#!/usr/bin/env bash
# --remote-cache URL: after a local miss the executable is fetched from an HTTP server, verified
# and stored locally; after a compile it is uploaded (manifest last) unless read-only. Runs
# against a real nginx with WebDAV PUT on 127.0.0.1, started by each test in its own directory.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MLP=$MODELS/mlp_functional.json
SMALL=(--tiles-per-ipu 64)
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Starts nginx serving $E2E_TMP/www with PUT; sets URL. Stopped when the test ends.
start_server() {
  [[ -x $NGINX ]] || skip "nginx is not installed (scripts/setup.sh installs nginx-light)"
  local port user=""
  port=$(free_port)
  mkdir -p www nginx
  [[ $(id -u) == 0 ]] && user="user root root;"  # workers must write www/, which is root's
  cat > nginx/nginx.conf <<CONF
$user
worker_processes 1;
pid $E2E_TMP/nginx/nginx.pid;
error_log $E2E_TMP/nginx/error.log;
events {}
http {
  access_log $E2E_TMP/nginx/access.log;
  client_body_temp_path $E2E_TMP/nginx/body;
  client_max_body_size 0;
  server {
    listen 127.0.0.1:$port;
    root $E2E_TMP/www;
    location / { dav_methods PUT; create_full_put_path on; }
  }
}
CONF
  "$NGINX" -p "$E2E_TMP/nginx" -c "$E2E_TMP/nginx/nginx.conf" -g 'daemon on;' 2> nginx/start.err ||
    fail "nginx did not start: $(cat nginx/start.err)"
  trap 'kill "$(cat "$E2E_TMP/nginx/nginx.pid")" 2> /dev/null' EXIT
  URL=http://127.0.0.1:$port/cache
  local i
  for i in $(seq 50); do
    "$PYTHON" -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2> /dev/null && return 0
    sleep 0.1
  done
  fail "nginx does not answer on port $port"
}

stats_of() {
  expect_exit 0 "$IPUCC" cache stats --cache-dir "$1" --json
}

test_remote_hit_on_a_fresh_local_cache() {
  start_server
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-dir first --remote-cache "$URL" --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_file "www/cache/${key:0:2}/$key.ipuexe"
  expect_file "www/cache/${key:0:2}/$key.manifest"
  cmp "www/cache/${key:0:2}/$key.manifest" "first/entries/${key:0:2}/$key.manifest" || fail "uploaded manifest differs"
  stats_of first
  expect_json "$STDOUT" 'd["remote_misses"] == 1 and d["remote_hits"] == 0 and d["remote_errors"] == 0'
  # A fresh local cache (another CI machine): found remotely, stored locally, nothing compiled.
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-dir second --remote-cache "$URL" --json
  expect_json "$STDOUT" "d['cache'] == 'remote-hit' and d['key'] == '$key' and d['timings']['lowering_s'] == 0"
  expect_json "$STDOUT" "d['entry'].endswith('second/entries/${key:0:2}/$key.ipuexe')"
  expect_file "second/entries/${key:0:2}/$key.ipuexe"
  stats_of second
  expect_json "$STDOUT" 'd["remote_hits"] == 1 and d["misses"] == 0 and d["compiles_avoided"] == 1'
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-dir second --remote-cache "$URL" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  # ipurun MODEL and the environment variable take the same path.
  IPUCC_REMOTE_CACHE=$URL expect_exit 0 "$IPURUN" predict "$MLP" "${SMALL[@]}" --mode train --cache-dir third \
    --data synthetic:64 --json
  expect_json "$STDOUT" 'd["cache"] == "remote-hit"'
  expect_stderr_contains "ipurun: remote cache hit ${key:0:16} (not compiled)"
  expect_stderr_not_contains "compiled in"
}

test_read_only_remote_is_never_written() {
  start_server
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --remote-cache "$URL" --remote-cache-readonly --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  IPUCC_REMOTE_CACHE=$URL IPUCC_REMOTE_CACHE_READONLY=1 expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" \
    --batch-size 8 --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_eq "$(find www -type f | wc -l)" 0 "files uploaded by read-only compiles"
  expect_eq "$(grep -c '"PUT ' nginx/access.log || true)" 0 "PUT requests"
  expect_eq "$(grep -c '"GET ' nginx/access.log)" 2 "GET requests (one manifest per miss)"
}

test_server_down_warns_once_and_compiles_locally() {
  local port
  port=$(free_port)  # nothing listens there
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --remote-cache "http://127.0.0.1:$port/cache" --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings"
  expect_stderr_contains "remote cache http://127.0.0.1:$port/cache not used for this compile"
  stats_of "$IPUCC_CACHE_DIR"
  expect_json "$STDOUT" 'd["remote_errors"] == 1 and d["misses"] == 1'
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --remote-cache "http://127.0.0.1:$port/cache" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  expect_error 2 "--remote-cache: 'ftp://x' is not an http:// or https:// URL" -- \
    "$IPUCC" compile "$MLP" --remote-cache ftp://x
  expect_error 2 "--remote-cache" -- "$IPURUN" predict "$MLP" --remote-cache ftp://x --data synthetic:8
}

# libcurl is loaded only when a remote cache is used; where it cannot be loaded, the remote
# cache is one warning and the compile goes on locally. (A bogus libcurl.so.4 first on the
# library path stands in for a machine without libcurl.)
test_unloadable_libcurl_warns_and_compiles_locally() {
  mkdir nolibcurl
  printf 'not a shared object' > nolibcurl/libcurl.so.4
  LD_LIBRARY_PATH=$PWD/nolibcurl expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --remote-cache "http://127.0.0.1:1/cache" --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings"
  expect_stderr_contains "cannot load libcurl.so.4"
  # Without a remote cache, ipucc never touches libcurl.
  LD_LIBRARY_PATH=$PWD/nolibcurl expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --json
  expect_json "$STDOUT" 'd["cache"] == "hit"'
  expect_eq "$(grep -c 'warning:' "$STDERR")" 0 "warnings without a remote cache"
}

test_corrupt_remote_entry_is_rejected_and_replaced() {
  start_server
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-dir first --remote-cache "$URL" --json
  local key remote_exe
  key=$(json_get "$STDOUT" 'd["key"]')
  remote_exe=www/cache/${key:0:2}/$key.ipuexe
  e2e_data flip "$remote_exe" 100
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-dir second --remote-cache "$URL" --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings"
  expect_stderr_contains "remote entry rejected, to be replaced after compiling"
  stats_of second
  expect_json "$STDOUT" 'd["remote_errors"] == 1 and d["remote_hits"] == 0'
  # That compile uploaded a sound entry in place of the rejected one.
  cmp "$remote_exe" "second/entries/${key:0:2}/$key.ipuexe" || fail "the remote entry was not replaced"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-dir fourth --remote-cache "$URL" --json
  expect_json "$STDOUT" 'd["cache"] == "remote-hit"'
  # A read-only compile rejects a corrupt entry and leaves it.
  e2e_data flip "$remote_exe" 100
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-dir ro --remote-cache "$URL" --remote-cache-readonly --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_stderr_contains "remote entry rejected"
  expect_stderr_not_contains "to be replaced"
  ! cmp -s "$remote_exe" "second/entries/${key:0:2}/$key.ipuexe" || fail "a read-only compile replaced the remote entry"
  # A manifest that is not the expected one is rejected too.
  printf 'key_schema=0\n' > "www/cache/${key:0:2}/$key.manifest"
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --cache-dir fifth --remote-cache "$URL" --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_stderr_contains "$key.manifest: differs from the expected manifest; remote entry rejected"
}

# A server (or whoever can PUT to it) serving the expected manifest, which anyone can compute,
# beside another model's sound executable: the executable records the manifest it was compiled
# from, so it is rejected and not stored, and the run computes the model asked for.
test_remote_executable_of_another_key_is_rejected_and_not_stored() {
  start_server
  local a=$MODELS/mlp_sequential.json b=$MODELS/mlp_residual.json key_a key_b
  local infer=(--tiles-per-ipu 64 --mode infer)
  expect_exit 0 "$IPUCC" compile "$b" "${infer[@]}" --cache-dir first --remote-cache "$URL" --json
  key_b=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPUCC" compile "$a" "${infer[@]}" --cache-dir first --remote-cache "$URL" --json
  key_a=$(json_get "$STDOUT" 'd["key"]')
  expect_exit 0 "$IPURUN" predict "$a" "${infer[@]}" --no-cache --data synthetic:64 --output a.npy
  cp "www/cache/${key_b:0:2}/$key_b.ipuexe" "www/cache/${key_a:0:2}/$key_a.ipuexe"
  expect_exit 0 "$IPURUN" predict "$a" "${infer[@]}" --cache-dir second --remote-cache "$URL" --remote-cache-readonly \
    --data synthetic:64 --output second.npy --json
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings"
  expect_stderr_contains "$URL/${key_a:0:2}/$key_a.ipuexe: the executable was compiled for cache key $key_b, not $key_a"
  expect_stderr_contains "remote entry rejected"
  cmp a.npy second.npy || fail "ipurun predict A did not compute model A"
  ! cmp -s "www/cache/${key_a:0:2}/$key_a.ipuexe" "second/entries/${key_a:0:2}/$key_a.ipuexe" ||
    fail "the rejected executable was stored locally"
  expect_exit 0 "$IPUCC" cache verify --cache-dir second
  expect_stdout_contains "1 ok, 0 corrupt"
  stats_of second
  expect_json "$STDOUT" 'd["remote_errors"] == 1 and d["remote_hits"] == 0 and d["misses"] == 1'
}

# A server whose manifest never ends: the compile reads no more than the manifest cap (64 KiB),
# warns naming the URL and the cap, and compiles locally at once.
test_endless_remote_manifest_is_cut_at_its_cap() {
  local port server start
  port=$(free_port)
  cat > endless.py <<'PY'
import http.server, sys
class Endless(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # no Content-Length: the body ends when the connection does
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        sent, chunk = 0, b"x" * 65536
        try:
            while sent < 2 << 30:
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        with open("sent", "a") as f:
            f.write("%d\n" % sent)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Endless).serve_forever()
PY
  "$PYTHON" endless.py "$port" &
  server=$!
  trap "kill $server 2> /dev/null" EXIT
  local i
  for i in $(seq 50); do
    "$PYTHON" -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2> /dev/null && break
    sleep 0.1
  done
  start=$SECONDS
  expect_exit 0 "$IPUCC" compile "$MLP" "${SMALL[@]}" --remote-cache "http://127.0.0.1:$port/cache" --json
  (( SECONDS - start < 10 )) || fail "the compile took $((SECONDS - start)) s"
  expect_json "$STDOUT" 'd["cache"] == "miss"'
  local key
  key=$(json_get "$STDOUT" 'd["key"]')
  expect_eq "$(grep -c 'warning:' "$STDERR")" 1 "warnings"
  expect_stderr_contains "http://127.0.0.1:$port/cache/${key:0:2}/$key.manifest: the answer is larger than 65536 bytes, the cap for a cache manifest; not read further; remote cache http://127.0.0.1:$port/cache not used for this compile"
  for i in $(seq 50); do [[ -s sent ]] && break; sleep 0.1; done
  # What the socket buffers took, a few MiB at most, not the body.
  (( $(head -n 1 sent) < 32 * 1024 * 1024 )) || fail "the server sent $(cat sent) bytes"
  stats_of "$IPUCC_CACHE_DIR"
  expect_json "$STDOUT" 'd["remote_errors"] == 1 and d["misses"] == 1'
}

run_tests "$@"
