#!/usr/bin/env bash
# Tests the packages make package left in build/dist, as a user meets them:
#   - lintian, Debian's checker, passes the .deb (overrides: lintian-overrides);
#   - the .deb installs (apt-get, as root; unpacked into a scratch root
#     otherwise), /usr/bin/freelane serve answers /v1/models and a chat
#     through the fake upstream and stops cleanly on SIGTERM, and removing
#     the package leaves the user's data directory alone;
#   - the tarball's install.sh installs into a scratch HOME's ~/.local,
#     the installed program serves, and --uninstall removes it;
#   - under Wine, freelane-cli.exe serve answers /v1/models and a chat and
#     stops cleanly on Ctrl-C, the desktop build freelane.exe serves, and
#     the installer installs and uninstalls.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(cat build/VERSION)
dist=build/dist
deb=$dist/freelane_${version}_amd64.deb
tarball=$dist/freelane_${version}_linux_amd64.tar.gz
zip=$dist/freelane_${version}_windows_amd64.zip
work=$(mktemp -d)
pids=()
remove_deb=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # A run that failed half-way does not leave its package installed.
  [ -n "$remove_deb" ] && DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq freelane >/dev/null 2>&1 || true
  [ -n "${WINEPREFIX:-}" ] && /usr/lib/wine/wineserver -k 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); echo "ok   $*"; }

# endpoint LOG: the base URL a FreeLane started on port 0 logged, once it
# has (up to 60 s).
endpoint() {
  local e
  for _ in $(seq 600); do
    e=$(tr -d '\r' <"$1" | sed -n 's|.*msg="FreeLane is serving" endpoint=\(http://[0-9.:]*\)/v1.*|\1|p' | head -1)
    [ -n "$e" ] && { echo "$e"; return 0; }
    sleep 0.1
  done
  return 1
}

# check_serving LOG WHAT: /v1/models lists the fake backend and a chat to
# auto is answered by it.
check_serving() {
  local base
  base=$(endpoint "$1") || fail "$2: FreeLane did not start: $(tail -3 "$1")"
  curl -fs -m 5 -o /dev/null "$base/healthz" || fail "$2: no answer at $base"
  curl -fs "$base/v1/models" | grep -q '"fake/m1"' || fail "$2: /v1/models does not list fake/m1"
  local h
  h=$(curl -fs -D - -o /dev/null "$base/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"model":"auto","messages":[{"role":"user","content":"hi"}]}')
  grep -qi '^x-freelane-backend: fake/m1' <<<"$h" || fail "$2: the chat was not served by fake/m1: $h"
}

# A fake vendor for every FreeLane below.
build/bin/fakeupstream >"$work/up.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/up.out" ] && break; sleep 0.05; done
up=$(head -1 "$work/up.out")
config() { # config FILE
  cat >"$1" <<EOF
listen: 127.0.0.1:0
providers:
  - {name: fake, tier: free, base_url: "$up", api_key: sk-package-test-0001, models: [{id: m1}]}
probes: {disabled: true}
discovery: {disabled: true}
EOF
}

# serve_and_stop BIN HOME NAME WHAT: BIN serve, with HOME as the user's
# home, answers and stops cleanly on SIGTERM, leaving its data in
# ~/.config/freelane.
serve_and_stop() {
  local bin=$1 home=$2 name=$3 what=$4 pid
  mkdir -p "$home"
  config "$work/$name.yaml"
  HOME=$home XDG_CONFIG_HOME=$home/.config FREELANE_KEYCHAIN=off "$bin" serve --config "$work/$name.yaml" >"$work/$name.out" 2>"$work/$name.err" &
  pid=$!
  pids+=($pid)
  check_serving "$work/$name.err" "$what"
  kill -TERM "$pid"
  wait "$pid" || fail "$what did not exit 0 on SIGTERM: $(tail -3 "$work/$name.err")"
  grep -q 'msg=stopped' "$work/$name.err" || fail "$what: no clean stop in the log"
  [ -f "$home/.config/freelane/freelane.db" ] || fail "$what: no data directory in ~/.config/freelane"
}

# 1. lintian.
[ -f "$deb" ] || fail "$deb is missing; run make package"
lintian --fail-on error,warning "$deb" >"$work/lintian.txt" 2>&1 ||
  { cat "$work/lintian.txt"; fail "lintian"; }
ok "lintian passes $(basename "$deb") with no warning or error"

# 2. Install the .deb and start /usr/bin/freelane serve.
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  # --reinstall: a package of the same version left by an earlier run is
  # replaced by this one.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall "./$deb" >"$work/apt.txt" 2>&1 || { cat "$work/apt.txt"; fail "apt-get install"; }
  remove_deb=1
  prefix=/usr
  installed=apt
else
  dpkg-deb -x "$deb" "$work/root"
  prefix=$work/root/usr
  installed="a scratch root (not root, so not installed for real)"
fi
[ -x "$prefix/bin/freelane" ] || fail "no $prefix/bin/freelane"
"$prefix/bin/freelane" version | grep -q "^freelane $version " || fail "the installed binary is not $version"
"$prefix/bin/freelane" --help 2>&1 | grep -q "freelane connect" || fail "--help does not list the commands"
[ -f "$prefix/lib/systemd/user/freelane.service" ] || fail "no systemd user unit"
if [ "$installed" = apt ] && command -v systemd-analyze >/dev/null; then
  # With the package installed, its unit, the binary and the man page it
  # names all check out.
  out=$(systemd-analyze verify /usr/lib/systemd/user/freelane.service 2>&1) || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify: $out"
fi
home=$work/debhome
serve_and_stop "$prefix/bin/freelane" "$home" deb "the .deb's freelane"
ok "the .deb installs with $installed, /usr/bin/freelane serve answers and stops cleanly"
if [ "$installed" = apt ]; then
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq freelane >"$work/apt.txt" 2>&1 || { cat "$work/apt.txt"; fail "apt-get remove"; }
  remove_deb=
  [ ! -e /usr/bin/freelane ] || fail "/usr/bin/freelane is still there after removal"
  [ -f "$home/.config/freelane/freelane.db" ] || fail "removing the package removed the user's data"
  ok "removing the .deb leaves the user's data directory alone"
fi

# 3. The tarball's install.sh into a scratch ~/.local.
thome=$work/tarhome
mkdir -p "$thome" "$work/tar"
tar -C "$work/tar" -xzf "$tarball"
HOME=$thome PATH=/usr/bin:/bin sh "$work/tar/freelane-$version/install.sh" >"$work/install.txt"
tbin=$thome/.local/bin/freelane
[ -x "$tbin" ] || fail "install.sh did not install $tbin"
grep -q "^Exec=$tbin" "$thome/.local/share/applications/freelane.desktop" || fail "the desktop entry does not name $tbin"
grep -q "^ExecStart=$tbin serve" "$thome/.local/share/systemd/user/freelane.service" || fail "the unit does not name $tbin"
serve_and_stop "$tbin" "$thome" tar "the tarball's freelane"
HOME=$thome sh "$work/tar/freelane-$version/install.sh" --uninstall >/dev/null
[ ! -e "$tbin" ] || fail "install.sh --uninstall left $tbin"
[ -f "$thome/.config/freelane/freelane.db" ] || fail "uninstalling removed the user's data"
ok "the tarball's install.sh installs into ~/.local, the program serves, --uninstall removes it"

# 4. Windows, under Wine.
[ -f "$zip" ] || fail "$zip is missing"
mkdir -p "$work/win"
(cd "$work/win" && unzip -q "$OLDPWD/$zip")
wdir=$work/win/freelane-$version
export WINEPREFIX=$work/wineprefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
wine=/usr/lib/wine/wine64
timeout 120 "$wine" wineboot --init >/dev/null 2>&1 || fail "wineboot"
x86_64-w64-mingw32-gcc -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
  build/package/wine/bcryptprimitives.c -ladvapi32
winpath() { echo "Z:${1//\//\\}"; }
"$wine" "$wdir/freelane-cli.exe" version 2>/dev/null | tr -d '\r' | grep -q "^freelane $version " || fail "freelane-cli.exe version"
config "$work/win.yaml"
FREELANE_KEYCHAIN=off "$wine" "$wdir/freelane-cli.exe" serve --config "$(winpath "$work/win.yaml")" \
  --data-dir "$(winpath "$work/windata")" >"$work/win.out" 2>"$work/win.err" &
pids+=($!)
check_serving "$work/win.err" "freelane-cli.exe under Wine"
# Ctrl-C: Wine turns SIGINT into the console's CTRL_C_EVENT.
pkill -INT -f "^$wdir/freelane-cli.exe" || fail "no freelane-cli.exe process to stop"
for _ in $(seq 200); do pgrep -f "^$wdir/freelane-cli.exe" >/dev/null || break; sleep 0.1; done
tr -d '\r' <"$work/win.err" | grep -q 'msg=stopped' || fail "freelane-cli.exe did not stop cleanly: $(tail -3 "$work/win.err")"
ok "freelane-cli.exe under Wine answers /v1/models and a chat, and stops cleanly on Ctrl-C"
config "$work/wingui.yaml"
FREELANE_KEYCHAIN=off "$wine" "$wdir/freelane.exe" serve --config "$(winpath "$work/wingui.yaml")" \
  --data-dir "$(winpath "$work/windata2")" >"$work/wingui.out" 2>"$work/wingui.err" &
pids+=($!)
check_serving "$work/wingui.err" "freelane.exe under Wine"
ok "the desktop build freelane.exe serves under Wine (its window and tray are not tested here)"

# The installer: a silent per-user install, the Start menu entry and the
# Apps entry, the installed program runs, and the uninstaller removes it.
setup=$dist/freelane_${version}_windows_amd64_setup.exe
[ -f "$setup" ] || fail "$setup is missing"
timeout 120 "$wine" "$setup" /S || fail "the installer failed"
wuser=$WINEPREFIX/drive_c/users/$(whoami)
inst=$wuser/AppData/Local/Programs/FreeLane
for f in freelane.exe freelane-cli.exe uninstall.exe; do [ -f "$inst/$f" ] || fail "the installer did not install $f"; done
[ -f "$wuser/AppData/Roaming/Microsoft/Windows/Start Menu/Programs/FreeLane.lnk" ] || fail "no Start menu entry"
"$wine" reg query 'HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\FreeLane' /v DisplayVersion 2>/dev/null |
  tr -d '\r' | grep -q "$version" || fail "no Apps entry with version $version"
"$wine" "$inst/freelane-cli.exe" version 2>/dev/null | tr -d '\r' | grep -q "^freelane $version " || fail "the installed freelane-cli.exe does not run"
timeout 60 "$wine" "$inst/uninstall.exe" /S || fail "the uninstaller failed"
# The uninstaller finishes from a copy of itself in the temporary folder.
for _ in $(seq 100); do [ -e "$inst/freelane.exe" ] || break; sleep 0.1; done
[ ! -e "$inst/freelane.exe" ] || fail "the uninstaller left freelane.exe"
ok "the Windows installer installs for the user (Start menu, Apps entry), the program runs, the uninstaller removes it"

for f in "$deb" "$tarball" "$zip" "$setup"; do
  echo "     $(basename "$f"): $(du -h "$f" | cut -f1)"
done
echo "$passed passed, 0 failed"
