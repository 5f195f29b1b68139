#!/bin/sh
# Installs FreeLane from this tarball for one user, under ~/.local (or
# PREFIX=/some/where): the program, its desktop entry and icon, the man
# page and a systemd user unit. ./install.sh --uninstall removes them
# again; the data directory (~/.config/freelane) is left alone either way.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix=${PREFIX:-$HOME/.local}

files="bin/freelane share/applications/freelane.desktop share/icons/hicolor/256x256/apps/freelane.png
share/man/man1/freelane.1.gz share/systemd/user/freelane.service share/doc/freelane/README.md.gz
share/doc/freelane/LICENSE"

if [ "${1:-}" = --uninstall ]; then
  for f in $files; do rm -f "$prefix/$f"; done
  rmdir "$prefix/share/doc/freelane" 2>/dev/null || true
  echo "FreeLane removed from $prefix; its data in ~/.config/freelane is kept."
  exit 0
fi
if [ -n "${1:-}" ]; then
  echo "usage: $0 [--uninstall]   (PREFIX=DIR to install elsewhere than ~/.local)" >&2
  exit 2
fi

for f in $files; do
  mode=644
  [ "$f" = bin/freelane ] && mode=755
  mkdir -p "$(dirname "$prefix/$f")"
  cp "$here/$f" "$prefix/$f.new"
  chmod "$mode" "$prefix/$f.new"
  mv "$prefix/$f.new" "$prefix/$f"
done
# The desktop entry and the unit name the program by its full path, so
# they work whether or not PREFIX/bin is on the PATH.
sed -i "s|^Exec=freelane|Exec=$prefix/bin/freelane|" "$prefix/share/applications/freelane.desktop"
sed -i "s|^ExecStart=/usr/bin/freelane|ExecStart=$prefix/bin/freelane|" "$prefix/share/systemd/user/freelane.service"
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$prefix/share/applications" || true

echo "FreeLane $("$prefix/bin/freelane" version | cut -d' ' -f2) installed in $prefix."
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "Add $prefix/bin to your PATH to run freelane from a shell." ;;
esac
echo "Start it from your desktop's menu, with freelane, or in the background: systemctl --user enable --now freelane"
