/* ProcessPrng for Wine 8, which lacks bcryptprimitives.dll: Go programs
 * since Go 1.22 read their random numbers from it, and Windows 10 and 11
 * ship it. The Windows test puts this DLL into its own Wine prefix only;
 * nothing of it is shipped. It fills the buffer from RtlGenRandom, the
 * system generator ProcessPrng wraps on Windows. */
#include <windows.h>
#define SystemFunction036 NTAPI SystemFunction036
#include <ntsecapi.h>
#undef SystemFunction036

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
    if (!RtlGenRandom(data, n)) return FALSE;
    data += n;
    len -= n;
  }
  return TRUE;
}
