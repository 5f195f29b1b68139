#!/usr/bin/env bash
# Makes FreeLane's release packages in build/dist from what `make build`
# and `make build-windows` left in build/bin:
#   freelane_VERSION_amd64.deb             the Debian package (dpkg-deb)
#   freelane_VERSION_linux_amd64.tar.gz    the same files for other
#                                          distributions, with install.sh
#   freelane_VERSION_windows_amd64.zip     freelane.exe and freelane-cli.exe
#                                          (when they were built)
#   freelane_VERSION_windows_amd64_setup.exe
#                                          the same as an installer (NSIS)
# Every tool it uses comes from Debian's packages (dpkg-dev, gzip, tar, zip,
# nsis).
set -euo pipefail
cd "$(dirname "$0")/../.."

version=$(cat build/VERSION)
dist=build/dist
bin=build/bin/freelane
[ -x "$bin" ] || { echo "package: $bin is missing; run make build first" >&2; exit 1; }

# Dates inside the packages come from SOURCE_DATE_EPOCH, or the last
# commit, so that two builds of one commit give the same files.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH=$epoch

rm -rf "$dist"
mkdir -p "$dist"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# tree lays out the installed files under $1, with the prefix $2 (/usr for
# the Debian package, the tarball's own root otherwise).
tree() {
  local root=$1
  install -Dm755 "$bin" "$root/bin/freelane"
  install -Dm644 build/linux/freelane.desktop "$root/share/applications/freelane.desktop"
  install -Dm644 build/linux/freelane.png "$root/share/icons/hicolor/256x256/apps/freelane.png"
  install -d "$root/share/man/man1"
  gzip -9n <build/package/freelane.1 >"$root/share/man/man1/freelane.1.gz"
  chmod 644 "$root/share/man/man1/freelane.1.gz"
  install -d "$root/share/doc/freelane"
  gzip -9n <README.md >"$root/share/doc/freelane/README.md.gz"
  chmod 644 "$root/share/doc/freelane/README.md.gz"
}

# The Debian package.
deb=$stage/deb
tree "$deb/usr"
install -Dm644 build/package/freelane.service "$deb/usr/lib/systemd/user/freelane.service"
install -Dm644 build/package/copyright "$deb/usr/share/doc/freelane/copyright"
cat >"$stage/changelog" <<EOF
freelane ($version) unstable; urgency=medium

  * Release $version.

 -- FreeLane authors <authors@freelane.invalid>  $(date -u -R -d "@$epoch")
EOF
gzip -9n <"$stage/changelog" >"$deb/usr/share/doc/freelane/changelog.gz"
chmod 644 "$deb/usr/share/doc/freelane/changelog.gz"

# The shared libraries the binary links (GTK, WebKitGTK, libc) decide
# Depends, as dpkg-shlibdeps reads them from the installed packages, so
# the package asks for runtime libraries and never the -dev packages.
mkdir -p "$stage/debian"
printf 'Source: freelane\n\nPackage: freelane\nArchitecture: amd64\n' >"$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O -e deb/usr/bin/freelane 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$deb" | cut -f1)
install -d "$deb/DEBIAN"
cat >"$deb/DEBIAN/control" <<EOF
Package: freelane
Version: $version
Architecture: amd64
Maintainer: FreeLane authors <authors@freelane.invalid>
Installed-Size: $size
Depends: $depends
Recommends: xdg-utils
Section: net
Priority: optional
Description: local LLM router with failover across paid, free and local models
 FreeLane gives every AI tool on the machine one endpoint,
 http://127.0.0.1:7788, speaking the OpenAI, Anthropic and Gemini APIs.
 Each request walks an ordered chain of model backends: the user's own
 keys, then free tiers, then local model servers, failing over in
 milliseconds when one is rate limited or down, never once an answer has
 started to stream.
 .
 It ships a catalog of free tiers, finds Ollama, LM Studio, llama.cpp and
 other local servers by itself, tracks quotas and budgets, and shows live
 health in a dashboard, as a desktop app with a tray icon or headless
 (freelane serve, or the systemd user unit).
EOF
(cd "$deb" && find usr -type f -exec md5sum {} + | sort -k2) >"$deb/DEBIAN/md5sums"
chmod 644 "$deb/DEBIAN/md5sums"
find "$deb" -type d -exec chmod 755 {} +
dpkg-deb --root-owner-group -Zxz --build "$deb" "$dist/freelane_${version}_amd64.deb" >/dev/null

# The tarball: the same files under freelane-VERSION/, and install.sh.
tar_root=$stage/tar/freelane-$version
tree "$tar_root"
install -Dm644 build/package/freelane.service "$tar_root/share/systemd/user/freelane.service"
install -Dm644 LICENSE "$tar_root/share/doc/freelane/LICENSE"
install -Dm755 build/package/install.sh "$tar_root/install.sh"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
  -C "$stage/tar" -czf "$dist/freelane_${version}_linux_amd64.tar.gz" "freelane-$version"

# The Windows zip, when the Windows build was made.
if [ -f build/bin/freelane.exe ]; then
  win=$stage/win/freelane-$version
  install -Dm755 build/bin/freelane.exe "$win/freelane.exe"
  install -Dm755 build/bin/freelane-cli.exe "$win/freelane-cli.exe"
  install -Dm644 LICENSE "$win/LICENSE.txt"
  sed 's/$/\r/' build/package/windows-readme.txt >"$win/README.txt"
  find "$stage/win" -exec touch -d "@$epoch" {} +
  (cd "$stage/win" && zip -qrX "$OLDPWD/$dist/freelane_${version}_windows_amd64.zip" "freelane-$version")
  # And the installer, made with Debian's NSIS.
  if command -v makensis >/dev/null; then
    cp build/windows/icon.ico "$win/icon.ico"
    makensis -V2 -DVERSION="$version" -DSRC="$win" -DOUTFILE="$PWD/$dist/freelane_${version}_windows_amd64_setup.exe" \
      build/package/freelane.nsi >/dev/null
    rm "$win/icon.ico"
  fi
fi

ls -l "$dist"
