#!/usr/bin/env bash
# End-to-end check of the terminal UI: the real binary in tmux, driven with
# send-keys and read with capture-pane. Run from .ci/run after the build:
#
#   tests/tui_e2e.sh [path/to/softbody]
#
# The binary defaults to $CARGO_TARGET_DIR/debug/softbody (target/ when the
# variable is unset). Needs tmux and python3 3.11+ (tomllib; the system one
# is preferred).
# No `set -e`: a failed check is counted and the script goes on.
set -uo pipefail
cd "$(dirname "$0")/.."

if ! command -v tmux >/dev/null; then
  echo "tui e2e: tmux is required"
  exit 1
fi
bin=${1:-${CARGO_TARGET_DIR:-target}/debug/softbody}
if [ ! -x "$bin" ]; then
  echo "tui e2e: no executable at $bin (build first)"
  exit 1
fi
bin=$(realpath "$bin")
socket=softbody-ci-$$
tmp=$(mktemp -d)
# Autosaves of these runs go here, not into the home directory.
export SOFTBODY_AUTOSAVE_DIR="$tmp/autosave"
passed=0
failed=0

tm() { tmux -L "$socket" "$@"; }
cleanup() {
  tm kill-server 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

pass() {
  passed=$((passed + 1))
  echo "ok: $1"
}
fail() {
  failed=$((failed + 1))
  echo "FAILED: $1"
  echo "--- screen:"
  screen || true
  echo "---"
}
screen() { tm capture-pane -p -t tui; }

# wait_for DESCRIPTION COMMAND...: polls COMMAND every 0.2 s for up to 20 s.
wait_for() {
  local what=$1
  shift
  for _ in $(seq 100); do
    if "$@"; then
      pass "$what"
      return 0
    fi
    sleep 0.2
  done
  fail "$what"
  return 1
}

shows() { screen | grep -qF -- "$1"; }
frame() { screen | grep -oE 'frame [0-9]+' | head -n1 | grep -oE '[0-9]+'; }
total() { screen | grep -oE 'total -?[0-9.]+e-?[0-9]+' | head -n1; }
frame_past() { [ "$(frame)" -gt "$1" ] 2>/dev/null; }
total_differs() { [ -n "$(total)" ] && [ "$(total)" != "$1" ]; }
starts_paused() { shows "frame 0 " && shows "paused"; }
exited() { [ -s "$tmp/status" ]; }

# A session that keeps the tmux server up: killing the server between runs
# raced with starting the next one (the new session went down with it).
tm new-session -d -s keeper "sleep 3600"

# start COMMAND: runs COMMAND in a 100x30 tmux session whose shell
# records the exit status and then keeps the pane for inspection.
start() {
  tm kill-session -t tui 2>/dev/null || true
  rm -f "$tmp/status"
  tm new-session -d -s tui -x 100 -y 30 \
    "$1; echo \$? > '$tmp/status'; sleep 600"
}

# 1. The cloth preset: play, change a weight, save as, quit.
start "'$bin' tui presets/hanging_cloth.toml"
if ! wait_for "starts paused at frame 0" starts_paused; then
  echo "tui e2e: $passed passed, $failed failed (the terminal UI did not start)"
  exit 1
fi
before=$(total)
tm send-keys -t tui Space
wait_for "plays" shows "playing"
wait_for "the frame counter advances" frame_past 0
first=$(frame)
wait_for "the frame counter keeps advancing" frame_past "$first"
wait_for "an energy value changes (was '$before')" total_differs "$before"

# The parameter list starts at the structural weight (1000); below it is
# the shear weight (500).
tm send-keys -t tui Down +
wait_for "↓ + raises the shear weight by 10^(1/4)" shows "shear        889.1"

saved=$tmp/saved.toml
tm send-keys -t tui S
wait_for "S opens the save-as prompt" shows "Save as"
tm send-keys -t tui C-u
tm send-keys -t tui -l "$saved"
tm send-keys -t tui Enter
wait_for "the preset is saved" shows "saved $saved"

tm resize-window -t tui -x 80 -y 24
redrawn_at_80x24() { screen | sed -n 2p | grep -q "^┌ Parameters" && screen | sed -n 23p | grep -q "^└kin"; }
wait_for "redraws after a resize to 80x24" redrawn_at_80x24

tm send-keys -t tui q
if wait_for "q quits" exited; then
  if [ "$(cat "$tmp/status")" = 0 ]; then pass "exit status 0"; else fail "exit status $(cat "$tmp/status")"; fi
fi
# (Polled: the run's last bytes may reach tmux after its exit status.)
restored() { [ "$(tm display-message -p -t tui '#{alternate_on} #{cursor_flag}')" = "0 1" ]; }
wait_for "the terminal is restored (main screen, cursor shown)" restored

if "$bin" inspect "$saved" --json >"$tmp/inspect.json"; then
  pass "softbody inspect loads the saved preset"
else
  fail "softbody inspect loads the saved preset"
fi
py=$(command -v /usr/bin/python3 || command -v python3)
if "$py" - "$saved" <<'EOF'; then
import math, sys, tomllib
with open(sys.argv[1], "rb") as f:
    weights = tomllib.load(f)["material"]["weights"]
# One step up, to 6 significant digits as the terminal UI writes it.
ok = weights["shear"] == 889.14 and math.isclose(889.14, 500 * 10 ** 0.25, rel_tol=1e-6) and weights["structural"] == 1000
sys.exit(0 if ok else f"weights: {weights}")
EOF
  pass "the saved preset has the new weight"
else
  fail "the saved preset has the new weight"
fi

# 2. Plain `softbody` on a terminal with no display: the terminal UI.
start "echo shell; env -u DISPLAY -u WAYLAND_DISPLAY '$bin'"
wait_for "plain softbody starts the terminal UI" shows "Parameters"
# Quit after the window grew: tmux filled the shell screen's new rows from
# the terminal UI's, whose boxes stayed above the shell's line (QA).
tm resize-window -t tui -x 160 -y 50
redrawn_at_160x50() { screen | sed -n 49p | grep -q "^└kin"; }
wait_for "redraws after an enlargement to 160x50" redrawn_at_160x50
tm send-keys -t tui q
wait_for "and quits" exited
no_trace() { [ "$(screen | sed -n 1p)" = shell ]; }
wait_for "the shell's screen keeps nothing of it" no_trace

# 3. Plain `softbody` piped: the help, for scripts.
if "$bin" | grep -q "Usage:"; then
  pass "piped softbody prints the help"
else
  failed=$((failed + 1))
  echo "FAILED: piped softbody prints the help"
fi

# 4. Two terminal UIs at once: neither offers the other's unsaved changes;
# once one is killed, the next start offers its changes back. (The first
# records its pid, for a kill without procps.)
start "sh -c 'echo \$\$ > $tmp/pid; exec $bin tui presets/hanging_cloth.toml'"
wait_for "a first terminal UI starts" starts_paused
tm send-keys -t tui Down +
autosaved() { compgen -G "$SOFTBODY_AUTOSAVE_DIR/autosave-*.json" >/dev/null; }
wait_for "an unsaved change is autosaved at once" autosaved
tm new-session -d -s other -x 100 -y 30 "'$bin' tui presets/hanging_cloth.toml; sleep 600"
other_started() { tm capture-pane -p -t other | grep -qF "Parameters"; }
wait_for "a second one starts alongside" other_started
if tm capture-pane -p -t other | grep -qF "Recover unsaved changes?"; then
  fail "the second does not offer the first's changes while it runs"
else
  pass "the second does not offer the first's changes while it runs"
fi
tm send-keys -t other q
kill -KILL "$(cat "$tmp/pid")"
wait_for "the first is killed" exited
start "sh -c 'echo \$\$ > $tmp/pid; exec $bin tui presets/hanging_cloth.toml'"
wait_for "the next start offers the killed one's changes" shows "Recover unsaved changes?"
tm send-keys -t tui r
wait_for "r recovers them" shows "shear        889.1"

# 5. A stop signal keeps every unsaved change, not only those of the last
# periodic autosave (the first change is written at once, the next ones 30 s
# later): closing the recovered run's tmux session above, a change after
# the recovery, sends it SIGHUP and takes its terminal away, as a dropped
# SSH session does (restoring that terminal failed, and saying so on it
# ended the run before it kept the change); then a run is sent SIGTERM.
status_is() { [ "$(cat "$tmp/status" 2>/dev/null)" = "$1" ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }
tm send-keys -t tui Down +
wait_for "a change after the recovery" shows "shear        1581"
tm kill-session -t tui
wait_for "closing its session ends the recovered run" gone "$(cat "$tmp/pid")"
start "sh -c 'echo \$\$ > $tmp/pid; exec $bin tui presets/hanging_cloth.toml'"
wait_for "SIGHUP kept the recovered changes" shows "Recover unsaved changes?"
tm send-keys -t tui r
wait_for "and the change after them" shows "shear        1581"
tm send-keys -t tui C-c C-c
wait_for "Ctrl-C twice leaves it" exited
start "sh -c 'echo \$\$ > $tmp/pid; exec $bin tui presets/hanging_cloth.toml'"
wait_for "the next start offers them again" shows "Recover unsaved changes?"
tm send-keys -t tui x
wait_for "x discards them" starts_paused
tm send-keys -t tui Down +
wait_for "a first change is autosaved at once" autosaved
tm send-keys -t tui +
wait_for "a second change is made" shows "shear        1581"
kill -TERM "$(cat "$tmp/pid")"
wait_for "SIGTERM ends the run" exited
wait_for "with status 143 (128 + SIGTERM)" status_is 143
start "'$bin' tui presets/hanging_cloth.toml"
wait_for "the next start offers the changes" shows "Recover unsaved changes?"
tm send-keys -t tui r
wait_for "r recovers both changes" shows "shear        1581"

# 6. Ctrl-C asks first; a second Ctrl-C leaves, and says where the unsaved
# changes went once the shell's screen is back.
tm send-keys -t tui C-c
wait_for "Ctrl-C with unsaved changes asks first" shows "keeping them for the next run"
tm send-keys -t tui C-c
if wait_for "a second Ctrl-C quits" exited; then
  if [ "$(cat "$tmp/status")" = 0 ]; then pass "exit status 0"; else fail "exit status $(cat "$tmp/status")"; fi
fi
wait_for "and tells the shell the changes are in the autosave" shows "unsaved changes are in the autosave"

# 7. A hang-up after a save (the terminal closes under the run, as a dropped
# SSH session's does, the run being its session leader): a stop, status
# 129 (128 + SIGHUP), and the run's autosave lock gone with it. (The terminal's drop said
# it could not show the cursor on the dead terminal, which panicked: the
# process aborted, status 134, its lock left behind; where SIGHUP came after
# the failed write it exited 1 with "Input/output error".)
cp presets/silk.toml "$tmp/hangup.toml"
hangup=$(BIN="$bin" PRESET="$tmp/hangup.toml" DIR="$SOFTBODY_AUTOSAVE_DIR" python3 - <<'PY'
import glob, os, pty, select, time
env = dict(os.environ, TERM="xterm-256color")
env.pop("DISPLAY", None)
env.pop("WAYLAND_DISPLAY", None)
pid, fd = pty.fork()
if pid == 0:
    os.execve(os.environ["BIN"], [os.environ["BIN"], "tui", os.environ["PRESET"]], env)
def drain_until(done, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if done():
            return True
        if select.select([fd], [], [], 0.05)[0]:
            try:
                os.read(fd, 65536)
            except OSError:
                return done()
    return done()
slot = lambda ext: glob.glob(f"{os.environ['DIR']}/autosave-{pid}-*.{ext}")
drain_until(lambda: False, 2)
os.write(fd, b"+")
written = drain_until(lambda: slot("json"), 20)
os.write(fd, b"s")
saved = drain_until(lambda: not slot("json"), 20)
os.close(fd)
end = time.time() + 60
while True:
    ended, status = os.waitpid(pid, os.WNOHANG)
    if ended:
        break
    if time.time() > end:
        os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
        break
    time.sleep(0.05)
print(written and saved, os.waitstatus_to_exitcode(status), len(slot("lock")))
PY
)
if [ "$hangup" = "True 129 0" ]; then
  pass "a hang-up after a save stops with status 129 and leaves no lock"
else
  failed=$((failed + 1))
  echo "FAILED: a hang-up after a save: autosaved and saved, status, locks left: $hangup"
fi

echo "tui e2e: $passed passed, $failed failed"
[ "$failed" = 0 ]
