#!/usr/bin/env bash
# Regenerates the README's editor screenshots (release build, Xvfb): the
# editor mid-simulation, then every shipped preset.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked
unset WAYLAND_DISPLAY
shoot() { # output preset frames [overlays]
  xvfb-run -a -s "-screen 0 1280x800x24" target/release/softbody gui "$2" \
    --frames "$3" ${4:+--overlay "$4"} --screenshot "docs/screenshots/$1.png" </dev/null
}
shoot editor presets/hanging_cloth.toml 45 springs
shoot hanging_cloth presets/hanging_cloth.toml 240 springs
for cloth in silk cotton denim leather rubber_sheet; do
  shoot "$cloth" "presets/$cloth.toml" 240
done
shoot jelly presets/jelly.toml 90 cut-away
shoot soft_rubber presets/soft_rubber.toml 120
shoot firm_rubber presets/firm_rubber.toml 120
