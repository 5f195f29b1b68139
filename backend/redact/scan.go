package redact

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// candidate reports whether s may hold a copy of a secret: whether a
// looked-up gram of its decoded, folded bytes is a gram of a pattern. It
// reads s once and allocates nothing. Between escapes, which is nearly all
// of any text, it jumps from one looked-up gram to the next and reads each
// gram's eight bytes directly; the bytes an escape decodes to are rolled
// into the gram one by one, so the grams looked up are those of the
// decoded text, at the same places find looks.
func candidate(p *patterns, s string) bool {
	var g uint64 // the last gramLen decoded bytes, folded
	k := gramLen // decoded bytes until the next lookup
	pct, bs := index(s, 0, '%'), index(s, 0, '\\')
	var buf [4]byte
	for i := 0; ; {
		j := min(pct, bs)
		e := i + k
		for ; e <= j; e += p.stride {
			var h uint64
			if e-i >= gramLen {
				h = gram8(s[e-gramLen : e])
			} else {
				h = g<<(8*(e-i)) | gramN(s[i:e])
			}
			if p.has(h) {
				return true
			}
		}
		k = e - j
		if j-i >= gramLen {
			g = gram8(s[j-gramLen : j])
		} else {
			g = g<<(8*(j-i)) | gramN(s[i:j])
		}
		if j == len(s) {
			return false
		}
		dn, sn := unescape(s, j, &buf)
		for _, d := range buf[:dn] {
			g = g<<8 | uint64(fold[d])
			if k--; k == 0 {
				k = p.stride
				if p.has(g) {
					return true
				}
			}
		}
		i = j + sn
		if pct < i {
			pct = index(s, i, '%')
		}
		if bs < i {
			bs = index(s, i, '\\')
		}
	}
}

// index is the index of c in s at or after from, or len(s).
func index(s string, from int, c byte) int {
	if i := strings.IndexByte(s[from:], c); i >= 0 {
		return from + i
	}
	return len(s)
}

// gram8 folds eight bytes into a gram; the loads are independent, unlike
// rolling them in one by one.
func gram8(s string) uint64 {
	_ = s[7]
	return uint64(fold[s[0]])<<56 | uint64(fold[s[1]])<<48 | uint64(fold[s[2]])<<40 | uint64(fold[s[3]])<<32 |
		uint64(fold[s[4]])<<24 | uint64(fold[s[5]])<<16 | uint64(fold[s[6]])<<8 | uint64(fold[s[7]])
}

// gramN folds fewer than eight bytes.
func gramN(s string) uint64 {
	var g uint64
	for i := range len(s) {
		g = g<<8 | uint64(fold[s[i]])
	}
	return g
}

// unescape decodes the unit of s at i: a URL escape (%XX, or %25XX
// escaped twice), a JSON escape (\uXXXX, with a surrogate pair read as one
// character, \\uXXXX of an ASCII character escaped twice, or \" \\ \/ \b
// \f \n \r \t), or else the byte itself. It returns the decoded bytes in buf
// and how many bytes of s the unit takes.
func unescape(s string, i int, buf *[4]byte) (dn, sn int) {
	c := s[i]
	switch {
	case c == '%' && i+2 < len(s):
		h, l := unhex(s[i+1]), unhex(s[i+2])
		if h == 2 && l == 5 && i+4 < len(s) {
			// %25XX is a URL escape escaped once more.
			if h, l := unhex(s[i+3]), unhex(s[i+4]); h >= 0 && l >= 0 {
				buf[0] = byte(h<<4 | l)
				return 1, 5
			}
		}
		if h >= 0 && l >= 0 {
			buf[0] = byte(h<<4 | l)
			return 1, 3
		}
	case c == '\\' && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u':
		// \\uXXXX is a JSON escape inside a JSON string inside JSON, as
		// an error body quoted in a JSON log line or message holds it.
		if r, ok := hex4(s, i+3); ok && r < utf8.RuneSelf {
			buf[0] = byte(r)
			return 1, 7
		}
		buf[0] = '\\'
		return 1, 2
	case c == '\\' && i+1 < len(s):
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			buf[0] = e
			return 1, 2
		case 'b', 'f', 'n', 'r', 't':
			buf[0] = jsonControl[e]
			return 1, 2
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				break
			}
			sn = 6
			if 0xD800 <= r && r < 0xDC00 {
				if lo, ok := hex4(s, i+8); ok && i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' && 0xDC00 <= lo && lo < 0xE000 {
					r, sn = 0x10000+(r-0xD800)<<10+(lo-0xDC00), 12
				}
			}
			return utf8.EncodeRune(buf[:], r), sn
		}
	}
	buf[0] = c
	return 1, 1
}

// jsonControl maps the letter of a JSON escape to the control character.
var jsonControl = [256]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for j := i; j < i+4; j++ {
		h := unhex(s[j])
		if h < 0 {
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}

// escape is one decoded unit that is not a plain byte: dn decoded bytes
// at dec made from sn bytes of the original at orig.
type escape struct {
	dec, orig int
	dn, sn    int
}

// decoded is a text with its escapes undone, and the way back from a
// decoded offset to the original's.
type decoded struct {
	b   []byte
	esc []escape // by dec
}

func decode(s string) decoded {
	first := min(index(s, 0, '%'), index(s, 0, '\\'))
	d := decoded{b: append(make([]byte, 0, len(s)), s[:first]...)}
	var buf [4]byte
	for i := first; i < len(s); {
		dn, sn := unescape(s, i, &buf)
		if sn > 1 || dn > 1 {
			d.esc = append(d.esc, escape{dec: len(d.b), orig: i, dn: dn, sn: sn})
		}
		d.b = append(d.b, buf[:dn]...)
		i += sn
	}
	return d
}

// span returns the original bytes [start, end) that decoded bytes [lo, hi)
// came from.
func (d decoded) span(lo, hi int) (start, end int) {
	start, _ = d.orig(lo)
	_, end = d.orig(hi - 1)
	return start, end
}

// orig returns the original bytes that decoded byte i came from.
func (d decoded) orig(i int) (start, end int) {
	// The last escape that starts at or before i.
	j, _ := slices.BinarySearchFunc(d.esc, i+1, func(e escape, t int) int { return cmp.Compare(e.dec, t) })
	if j == 0 {
		return i, i + 1
	}
	e := d.esc[j-1]
	if i < e.dec+e.dn {
		return e.orig, e.orig + e.sn
	}
	o := e.orig + e.sn + i - (e.dec + e.dn)
	return o, o + 1
}

// hit is a run of decoded bytes that is a copy of a secret.
type hit struct {
	start, end int // in the original text
	secret     int
}

// find returns the original spans of every copy of a secret in s, sorted
// and merged where they overlap, or nil for none.
func (p *patterns) find(s string) []hit {
	d := decode(s)
	var hits []hit
	covered := 0 // decoded bytes before this are inside a found run
	var g uint64
	k := gramLen
	for i, c := range d.b {
		g = g<<8 | uint64(fold[c])
		if k--; k > 0 {
			continue
		}
		k = p.stride
		at := i + 1 - gramLen
		if i+1 <= covered || !p.has(g) {
			continue
		}
		for _, r := range p.grams[g] {
			pt := &p.pats[r.pat]
			lo, hi, ok := pt.grow(d.b, at, int(r.off))
			if !ok {
				continue
			}
			covered = max(covered, hi)
			start, end := d.span(lo, hi)
			hits = append(hits, hit{start: start, end: end, secret: pt.secret})
		}
	}
	if hits == nil {
		return nil
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end)) })
	merged := hits[:1]
	for _, h := range hits[1:] {
		last := &merged[len(merged)-1]
		if h.start >= last.end {
			merged = append(merged, h)
			continue
		}
		last.end = max(last.end, h.end)
		// A key's marker wins over a header value's: it says more.
		if p.secrets[h.secret].Marker == KeyMarker {
			last.secret = h.secret
		}
	}
	return merged
}

// grow checks that the gram of b at at is the pattern's gram at off and
// grows it to the longest run of b that matches the pattern, returning
// the run's decoded bytes and whether it is long enough to count.
func (pt *pattern) grow(b []byte, at, off int) (lo, hi int, ok bool) {
	for j := range gramLen {
		if !pt.eq(b[at+j], off+j) {
			return 0, 0, false
		}
	}
	lo, plo := at, off
	for lo > 0 && plo > 0 && pt.eq(b[lo-1], plo-1) {
		lo, plo = lo-1, plo-1
	}
	hi, phi := at+gramLen, off+gramLen
	for hi < len(b) && phi < len(pt.s) && pt.eq(b[hi], phi) {
		hi, phi = hi+1, phi+1
	}
	if hi-lo < pt.minRun {
		return 0, 0, false
	}
	if pt.kind == b64 {
		if plo == 0 && pt.lead && lo > 0 && isBase64(b[lo-1]) {
			lo--
		}
		if phi == len(pt.s) && pt.trail && hi < len(b) && isBase64(b[hi]) {
			hi++
		}
	}
	return lo, hi, true
}

// eq compares decoded byte c with the pattern's byte at i.
func (pt *pattern) eq(c byte, i int) bool {
	want := pt.s[i]
	if pt.kind == b64 {
		return b64norm[c] == want
	}
	return lower[c] == want || want == ' ' && c == '+'
}

func isBase64(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

// replace returns s with each hit's span replaced by its secret's marker.
func (p *patterns) replace(s string, hits []hit) []byte {
	out := make([]byte, 0, len(s))
	prev := 0
	for _, h := range hits {
		out = append(out, s[prev:h.start]...)
		out = append(out, p.secrets[h.secret].Marker...)
		prev = h.end
	}
	return append(out, s[prev:]...)
}
