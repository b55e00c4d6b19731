#!/usr/bin/env bash
# Regenerates link/hot-code.ld, the list of functions a running bridge executes, which
# the release link (build.rs) places together at the front of the binary's code.
#
# Why: Linux maps a binary's code into a process a page-cache folio at a time (tens
# to hundreds of KiB), so a bridge whose few thousand functions lie scattered over
# 60 MB of code had 27 MiB of it resident with one chat; placed together they fit in
# about 7 MiB (docs/performance.md, "2026-12-02, sixth").
#
# How: the load benchmark's one-request-at-a-time phase runs the release binary under
# valgrind's callgrind, once per platform it covers (Telegram, Slack, Discord), 32
# rounds each: long enough for the engine's rescan (every 10 s) and SQLite's WAL
# checkpoint to run, as they do in any bridge that runs. Then its burst with the agent
# (twenty decisions at once; `HOT_CODE_BURST` sets how many). Each run goes from start
# to a clean stop. Every function of the binary that ran is listed. Each name is
# Rust's v0 mangling (.cargo/config.toml), which spells out a generic instance's type
# arguments; the crate hashes in it change with the build's settings and dependencies,
# so they and the back-references that depend on their length become wildcards and
# the list matches the same functions in any release build of this code.
#
# Usage: bash link/hot-code.sh [BINARY]
#   BINARY: the build to record (default: target/release/hitl-bridge, built here).
#   LOAD_BENCH=<path>: a load benchmark already built, instead of building it here.
#   HOT_CODE_KEEP=1: add to the patterns link/hot-code.ld has instead of replacing
#     them. The `dist` build (cross-crate optimized, what the Dockerfile ships) and a
#     `--release` build inline differently, so each runs functions the other does not
#     have; the committed list is the union of both recorded (docs/development.md).
# Needs valgrind, nm (binutils) and awk. Takes about half an hour on 2 cores, most of
# it building the benchmark. Run it after a change that moves what a round runs (a new
# dependency, a rewritten hot path) and commit the new link/hot-code.ld.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in valgrind nm awk; do
  command -v "$tool" >/dev/null || { echo "$tool is needed (Debian: apt-get install valgrind binutils)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work" link/hot-code.ld.new' EXIT

# The benchmark drives the bridge; only its figures' speed depends on how it is built,
# so it is built without cross-crate optimization (minutes instead of most of an hour).
bench=${LOAD_BENCH:-}
if [ -z "$bench" ]; then
  echo "building the load benchmark"
  bench=$(CARGO_PROFILE_BENCH_LTO=false CARGO_PROFILE_BENCH_CODEGEN_UNITS=16 \
    cargo bench --locked --bench load --no-run 2>&1 | tee "$work/build.log" | sed -n 's/.*Executable benches\/load.rs (\(.*\))$/\1/p')
  [ -n "$bench" ] || { cat "$work/build.log" >&2; echo "could not build the load benchmark" >&2; exit 1; }
fi
binary=$(realpath "${1:-target/release/hitl-bridge}")

# The benchmark ends its child with SIGKILL, which would lose callgrind's record; the
# wrapper keeps valgrind in the background, so it outlives the kill and is stopped
# here with SIGTERM, which the bridge handles as a normal stop.
cat > "$work/wrap" <<EOF
#!/usr/bin/env bash
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.%p" "$binary" "\$@" 2>>"$work/valgrind.log" &
echo \$! > "$work/valgrind.pid"
wait
EOF
chmod +x "$work/wrap"

# Stops the bridge the last run left under valgrind, so callgrind writes its record.
stop_recorded() {
  local pid
  pid=$(cat "$work/valgrind.pid")
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 1; done
}

for platform in telegram slack discord; do
  echo "recording a bridge on $platform"
  LOAD_BINARY="$work/wrap" LOAD_ONE_ON="$platform" LOAD_ONE_SYNC=full LOAD_ROUNDS=32 \
    LOAD_SKIP=agents,latency,limits,store,cross,pending,slack,discord,teams "$bench" --bench > "$work/$platform.log"
  stop_recorded
done

# A burst runs code a lone request does not: writes queued together share one
# statement (store/group_commit.rs), reads asked together share one. Without it in the
# list, those functions sat outside the hot section and their pages raised the peak
# with 200 at once by 1-2 MiB (docs/performance.md, "2026-12-04, tenth"). Twenty at
# once take those paths as two hundred do, at a tenth of valgrind's time.
echo "recording a bridge in a burst of decisions with the agent replying"
LOAD_BINARY="$work/wrap" LOAD_BURST="${HOT_CODE_BURST:-20}" \
  LOAD_SKIP=one,latency,limits,store,cross,pending,slack,discord,teams "$bench" --bench > "$work/burst.log"
stop_recorded

# Every function the runs entered, by the name in the binary's symbol table.
sed -n 's/^c\{0,1\}fn=([0-9]*) //p' "$work"/callgrind.* | sort -u > "$work/ran"
nm --defined-only "$binary" | awk '$2 ~ /^[tTwW]$/ { print $3 }' | sort -u > "$work/text"
comm -12 "$work/ran" "$work/text" > "$work/hot"
# The CPU valgrind emulates has no SHA extensions, so the runs took the portable SHA-1
# and SHA-256 code (signing tokens, WebSocket handshakes); a real x86 CPU takes these.
grep -E '^_R.*_4sha[12].*3x86.*digest_blocks' "$work/text" >> "$work/hot" || true
[ -s "$work/hot" ] || { echo "callgrind recorded no function of $binary" >&2; exit 1; }

# The patterns of the current list, when they are kept.
kept=/dev/null
if [ -n "${HOT_CODE_KEEP:-}" ] && [ -f link/hot-code.ld ]; then
  kept="$work/kept"
  grep '^    \*(' link/hot-code.ld > "$kept" || true
fi

{
  cat <<'EOF'
/* The functions a running bridge executes, placed together at the front of its code,
 * so the pages a bridge reads in are few (build.rs gives this script to the release
 * link). Generated by link/hot-code.sh from the load benchmark's one-at-a-time runs
 * on Telegram, Slack and Discord and its burst with the agent, of a --release and of
 * a dist build; do not edit by hand. A function missing here still links and runs; it
 * only stays where the linker puts the rest. */
SECTIONS {
  .text.hot : {
EOF
  # A function's section is .text.<symbol>, or .text.unlikely.<symbol> for one the
  # compiler holds cold (Rust's #[cold], the growth paths of Vec; GCC's .cold halves).
  # Crate hashes (Cs<base62>_) and back-references (B<base62>_) become wildcards, and
  # LLVM's .llvm.<n> suffix on a promoted local a trailing one. A wildcard only widens
  # a pattern: it always matches the function it was made from.
  awk '/^_R/ { sub(/\.llvm\.[0-9]+$/, ""); gsub(/Cs[0-9A-Za-z]*_/, "Cs*_"); gsub(/B[0-9A-Za-z]*_/, "B*_"); $0 = $0 "*" }
       !/^_R/ { sub(/\.cold$/, "") }
       { print "    *(.text." $0 " .text.unlikely." $0 ")" }' "$work/hot" | sort -u - "$kept"
  cat <<'EOF'
  }
}
INSERT BEFORE .text;
EOF
} > link/hot-code.ld.new
# Replaced in one rename, so a stop half way never leaves a truncated list.
mv link/hot-code.ld.new link/hot-code.ld
echo "link/hot-code.ld: $(wc -l < "$work/hot") functions, $(grep -c '^    \*' link/hot-code.ld) patterns"
