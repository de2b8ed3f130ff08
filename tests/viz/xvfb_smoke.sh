#!/usr/bin/env bash
# xvfb_smoke.sh NCSIM SOURCE_DIR -- `ncsim viz` in a real window: under Xvfb (xvfb-run -a),
# open a trace of the demo GEMM, zoom in with the keyboard through xdotool (`+` three
# times, Right), then quit with q; a second run quits with Escape. Passes when the viewer
# exits 0 on its own and its final time window (printed by -v) is narrower than the trace.
# Exits 77 (skipped) when xvfb-run or xdotool is missing. There is no window manager under
# xvfb-run, so keys go to the window with `xdotool key --window` (no windowactivate).
set -u
ncsim=${1:?usage: xvfb_smoke.sh NCSIM SOURCE_DIR}
src=${2:?usage: xvfb_smoke.sh NCSIM SOURCE_DIR}
if [ -z "${XVFB_SMOKE_INNER:-}" ]; then
  for tool in xvfb-run xdotool Xvfb xauth; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "xvfb_smoke: $tool not found: skipped (apt-get install xvfb xauth xdotool)"
      exit 77
    fi
  done
  export XVFB_SMOKE_INNER=1
  exec xvfb-run -a -s "-screen 0 1280x1024x24" bash "$0" "$@"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ncsim" run "$src/kernels/demo_gemm.nca" --random-inputs 1 -q --trace "$tmp/t.json" || {
  echo "xvfb_smoke: ncsim run failed"; exit 1; }

# run_viz KEY...: open the window, send the keys, wait for the viewer to exit. Under
# AddressSanitizer the X11 and Mesa libraries SDL loads keep memory to the end: leak checks
# are off here (the headless tests check ncsim's own memory).
run_viz() {
  unset SDL_VIDEODRIVER
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  "$ncsim" viz "$tmp/t.json" -v --width 900 --height 600 2>"$tmp/viz.err" &
  local pid=$! wid=""
  for _ in $(seq 1 100); do
    wid=$(xdotool search --name "ncsim viz" 2>/dev/null | head -n 1)
    [ -n "$wid" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$wid" ]; then
    echo "xvfb_smoke: no viewer window appeared"; cat "$tmp/viz.err"
    kill "$pid" 2>/dev/null; return 1
  fi
  sleep 0.5
  for key in "$@"; do
    # the last key closes the window: xdotool's own error about its key release is expected
    xdotool key --window "$wid" "$key" 2>/dev/null
    sleep 0.2
  done
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "xvfb_smoke: the viewer did not quit on '${*: -1}'"; kill "$pid"; return 1
  fi
  wait "$pid"
  local rc=$?
  cat "$tmp/viz.err"
  if [ "$rc" -ne 0 ]; then echo "xvfb_smoke: viewer exited $rc"; return 1; fi
  return 0
}

# the trace spans [a, b] ns; after three 1.5x zooms the window is (b - a) / 3.375 plus margins
run_viz plus plus plus Right q || exit 1
span=$(sed -n 's/.*spanning \([0-9.]*\) ns.*/\1/p' "$tmp/viz.err")
win=$(sed -n 's/.*window \([-0-9.]*\) \.\. \([-0-9.]*\) ns.*/\1 \2/p' "$tmp/viz.err")
if [ -z "$span" ] || [ -z "$win" ]; then echo "xvfb_smoke: no view report"; exit 1; fi
read -r a b <<<"$win"
if ! awk -v a="$a" -v b="$b" -v s="$span" 'BEGIN { exit !((b - a) < s / 2.5 && (b - a) > s / 5) }'; then
  echo "xvfb_smoke: window $a .. $b ns after zooming in 3.375x a trace of $span ns"; exit 1
fi
run_viz minus Escape || exit 1
echo "xvfb_smoke: ok (zoomed to $a .. $b ns of $span ns, quit with q and with Escape)"
