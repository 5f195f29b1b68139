package metrics

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// seriesCodecVersion leads every encoded bucket, so a later encoding can
// still read the rows of this one.
const seriesCodecVersion = 1

var errBadBucket = errors.New("metrics: malformed series bucket")

// encodeBucket encodes everything of b but its request count, which the
// stored row keeps in its own column: the failures by class, quota skips,
// tokens, cost, and both distributions with only their non-empty bins (a
// minute of a quiet backend has a handful), each as its distance from the
// previous one and its count.
func encodeBucket(b *bucket) []byte {
	out := make([]byte, 0, 64)
	out = append(out, seriesCodecVersion)
	for _, c := range b.errs {
		out = binary.AppendUvarint(out, uint64(c))
	}
	out = binary.AppendUvarint(out, uint64(b.quota))
	out = binary.AppendUvarint(out, b.prompt)
	out = binary.AppendUvarint(out, b.output)
	out = binary.AppendUvarint(out, b.estimated)
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(b.cost))
	for _, d := range [...]*sdist{&b.lat, &b.ttft} {
		out = binary.AppendUvarint(out, uint64(d.n))
		if d.n == 0 {
			continue
		}
		out = binary.AppendUvarint(out, uint64(d.lo))
		out = binary.AppendUvarint(out, uint64(d.hi))
		var used uint64
		for _, c := range d.h {
			if c != 0 {
				used++
			}
		}
		out = binary.AppendUvarint(out, used)
		prev := -1
		for i, c := range d.h {
			if c == 0 {
				continue
			}
			out = binary.AppendUvarint(out, uint64(i-prev))
			out = binary.AppendUvarint(out, uint64(c))
			prev = i
		}
	}
	return out
}

// decodeBucket reads what encodeBucket wrote into b (the request count is
// left alone). Bad input gives errBadBucket, never a panic.
func decodeBucket(data []byte, b *bucket) error {
	if len(data) == 0 || data[0] != seriesCodecVersion {
		return errBadBucket
	}
	p := data[1:]
	bad := false
	next := func() uint64 {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			bad = true
			return 0
		}
		p = p[n:]
		return v
	}
	u32 := func() uint32 {
		v := next()
		if v > math.MaxUint32 {
			bad = true
		}
		return uint32(v)
	}
	var nb bucket
	nb.requests = b.requests
	for i := range nb.errs {
		nb.errs[i] = u32()
	}
	nb.quota = u32()
	nb.prompt = next()
	nb.output = next()
	nb.estimated = next()
	if bad || len(p) < 8 {
		return errBadBucket
	}
	nb.cost = math.Float64frombits(binary.LittleEndian.Uint64(p))
	p = p[8:]
	for _, d := range [...]*sdist{&nb.lat, &nb.ttft} {
		d.n = u32()
		if bad {
			return errBadBucket
		}
		if d.n == 0 {
			continue
		}
		d.lo = time.Duration(next())
		d.hi = time.Duration(next())
		used := next()
		if bad || used > coarseBins {
			return errBadBucket
		}
		at := -1
		for range used {
			at += int(min(next(), coarseBins+1))
			c := u32()
			if bad || at < 0 || at >= coarseBins {
				return errBadBucket
			}
			d.h[at] = c
		}
	}
	if bad || len(p) != 0 {
		return errBadBucket
	}
	*b = nb
	return nil
}
