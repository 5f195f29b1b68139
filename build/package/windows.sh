#!/usr/bin/env bash
# Cross-compiles FreeLane for Windows (amd64) with Debian's MinGW-w64:
#   build/bin/freelane.exe       the desktop app (GUI subsystem: no console
#                                window when started from the menu)
#   build/bin/freelane-cli.exe   the same program as a console program, for
#                                freelane-cli serve, connect, check and
#                                version in a terminal, where Ctrl-C stops it
# Both carry the icon, the manifest (common controls 6, per-monitor DPI)
# and the version from build/windows. Usage: windows.sh 'LDFLAGS'.
set -euo pipefail
cd "$(dirname "$0")/../.."
ldflags=${1:?usage: windows.sh LDFLAGS}
version=$(cat build/VERSION)
cc=x86_64-w64-mingw32-gcc
command -v "$cc" >/dev/null || { echo "windows: $cc is missing (Debian package gcc-mingw-w64-x86-64; make deps-package installs it)" >&2; exit 1; }

work=$(mktemp -d)
syso=app/rsrc_windows_amd64.syso
trap 'rm -rf "$work" "$syso"' EXIT
IFS=. read -r major minor patch <<<"$version"
sed "s/{{.Info.ProductVersion}}/$version/" build/windows/wails.exe.manifest >"$work/freelane.manifest"
cp build/windows/icon.ico "$work/icon.ico"
cat >"$work/freelane.rc" <<RC
#include <winver.h>
1 ICON "icon.ico"
1 24 "freelane.manifest"
VS_VERSION_INFO VERSIONINFO
FILEVERSION $major,$minor,$patch,0
PRODUCTVERSION $major,$minor,$patch,0
BEGIN
  BLOCK "StringFileInfo"
  BEGIN
    BLOCK "040904B0"
    BEGIN
      VALUE "CompanyName", "The FreeLane authors"
      VALUE "FileDescription", "FreeLane local LLM router"
      VALUE "FileVersion", "$version"
      VALUE "ProductName", "FreeLane"
      VALUE "ProductVersion", "$version"
      VALUE "LegalCopyright", "Copyright 2026 The FreeLane authors (MIT)"
    END
  END
  BLOCK "VarFileInfo"
  BEGIN
    VALUE "Translation", 0x409, 1200
  END
END
RC
x86_64-w64-mingw32-windres -I "$work" -O coff -o "$syso" "$work/freelane.rc"

export CGO_ENABLED=1 CC=$cc GOOS=windows GOARCH=amd64
go build -tags desktop,production -trimpath -ldflags "$ldflags -H windowsgui" -o build/bin/freelane.exe ./app
go build -tags desktop,production -trimpath -ldflags "$ldflags" -o build/bin/freelane-cli.exe ./app
ls -l build/bin/freelane.exe build/bin/freelane-cli.exe
