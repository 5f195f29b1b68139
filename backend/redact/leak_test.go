package redact_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"freelane/backend/redact"
)

// leak reports the first copy of a secret that out still holds, in any of
// the encodings the Redactor undoes, or "" for none. It is written
// independently of the Redactor, the slow and obvious way: decode the
// whole text, then look for every 16-character run of every secret (the
// whole of a shorter one) in every letter case and for its base64 at every
// alignment in both alphabets.
func leak(out string, secrets ...string) string {
	dec := naiveUnescape(out)
	low := strings.ToLower(dec)
	spaced := strings.ReplaceAll(low, "+", " ")
	std := urlToStd.Replace(dec)
	for _, s := range secrets {
		for _, n := range needlesOf(s) {
			if strings.Contains(low, n.lower) || strings.Contains(spaced, n.lower) {
				return fmt.Sprintf("%q holds the run %q of a secret", out, n.run)
			}
			for _, core := range n.cores {
				if strings.Contains(std, core) {
					return fmt.Sprintf("%q holds the base64 %q of the run %q of a secret", out, core, n.run)
				}
			}
		}
	}
	return ""
}

var urlToStd = strings.NewReplacer("-", "+", "_", "/")

// needle is one run of a secret and what to look for: the run in lower
// case and its base64 at the three alignments.
type needle struct {
	run, lower string
	cores      []string
}

// needles caches each secret's needles: the fuzz target asks for them on
// every input.
var needles sync.Map

func needlesOf(s string) []needle {
	if v, ok := needles.Load(s); ok {
		return v.([]needle)
	}
	var out []needle
	for _, run := range runs(s) {
		n := needle{run: run, lower: strings.ToLower(run)}
		for a := range 3 {
			if core := b64Core(run, a); len(core) >= 4 {
				n.cores = append(n.cores, core)
			}
		}
		out = append(out, n)
	}
	needles.Store(s, out)
	return out
}

// runs lists the runs of s that count as copies of it.
func runs(s string) []string {
	if len(s) < redact.RunLen {
		return []string{s}
	}
	var out []string
	for i := 0; i+redact.RunLen <= len(s); i++ {
		out = append(out, s[i:i+redact.RunLen])
	}
	return out
}

// b64Core is the part of the base64 of s, placed at byte a of a group of
// three, that depends on the bytes of s only.
func b64Core(s string, a int) string {
	enc := base64.StdEncoding.EncodeToString(append(make([]byte, a), s...))
	startBit, endBit := 8*a, 8*(a+len(s))
	lo := (startBit + 5) / 6
	hi := endBit / 6
	if hi <= lo {
		return ""
	}
	return enc[lo:hi]
}

// naiveUnescape undoes URL escapes and JSON escapes, left to right, one
// level, as the clients that read FreeLane's answers do.
func naiveUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(byte(hexv(s[i+1])<<4 | hexv(s[i+2])))
			i += 2
			continue
		}
		if c == '\\' && i+1 < len(s) {
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				b.WriteByte(e)
				i++
				continue
			case 'n', 't', 'r', 'b', 'f':
				b.WriteByte(map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f'}[e])
				i++
				continue
			case 'u':
				if i+5 < len(s) && allHex(s[i+2:i+6]) {
					r := rune(hexv4(s[i+2 : i+6]))
					n := 5
					if r >= 0xD800 && r < 0xDC00 && i+11 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' && allHex(s[i+8:i+12]) {
						if lo := rune(hexv4(s[i+8 : i+12])); lo >= 0xDC00 && lo < 0xE000 {
							r, n = 0x10000+(r-0xD800)<<10+(lo-0xDC00), 11
						}
					}
					b.WriteString(string(utf8.AppendRune(nil, r)))
					i += n
					continue
				}
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

func allHex(s string) bool {
	for i := range len(s) {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func hexv(c byte) int { return strings.IndexByte("0123456789abcdef", c|0x20) }

func hexv4(s string) int {
	v := 0
	for i := range 4 {
		v = v<<4 | hexv(s[i])
	}
	return v
}
