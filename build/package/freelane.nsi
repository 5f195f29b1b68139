; The Windows installer: a per-user install (no administrator needed) of
; freelane.exe and freelane-cli.exe under %LocalAppData%\Programs\FreeLane,
; a Start menu entry, and an entry in Settings > Apps that uninstalls it.
; Uninstalling leaves the data directory (%AppData%\freelane) alone.
; makensis -DVERSION=x.y.z -DSRC=dir -DOUTFILE=setup.exe freelane.nsi
Unicode true
Target amd64-unicode
SetCompressor /SOLID lzma
RequestExecutionLevel user

Name "FreeLane ${VERSION}"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\FreeLane"
Icon "${SRC}\icon.ico"
UninstallIcon "${SRC}\icon.ico"
VIProductVersion "${VERSION}.0"
VIAddVersionKey "ProductName" "FreeLane"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "FreeLane installer"
VIAddVersionKey "LegalCopyright" "Copyright 2026 The FreeLane authors (MIT)"

!define UNINSTKEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\FreeLane"

Page directory
Page instfiles
UninstPage uninstConfirm
UninstPage instfiles

Section "FreeLane"
  SetOutPath "$INSTDIR"
  File "${SRC}\freelane.exe"
  File "${SRC}\freelane-cli.exe"
  File "${SRC}\LICENSE.txt"
  File "${SRC}\README.txt"
  WriteUninstaller "$INSTDIR\uninstall.exe"
  CreateShortcut "$SMPROGRAMS\FreeLane.lnk" "$INSTDIR\freelane.exe"
  WriteRegStr HKCU "${UNINSTKEY}" "DisplayName" "FreeLane"
  WriteRegStr HKCU "${UNINSTKEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINSTKEY}" "Publisher" "The FreeLane authors"
  WriteRegStr HKCU "${UNINSTKEY}" "DisplayIcon" "$INSTDIR\freelane.exe"
  WriteRegStr HKCU "${UNINSTKEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINSTKEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINSTKEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKCU "${UNINSTKEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINSTKEY}" "NoRepair" 1
SectionEnd

Section "Uninstall"
  Delete "$INSTDIR\freelane.exe"
  Delete "$INSTDIR\freelane-cli.exe"
  Delete "$INSTDIR\LICENSE.txt"
  Delete "$INSTDIR\README.txt"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  Delete "$SMPROGRAMS\FreeLane.lnk"
  DeleteRegKey HKCU "${UNINSTKEY}"
SectionEnd
