package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
)

// The FreeLane mark: three lanes on a rounded square, the middle one ending
// in an arrow, the request taking the lane that is free. The app icon
// (build/appicon.png) and the tray icons are this one drawing; the tray
// only changes the square's colour to say how routing is doing.

// Colours of the mark.
var (
	brandColor = color.RGBA{0x0f, 0x76, 0x6e, 0xff} // the app icon
	greenColor = color.RGBA{0x16, 0xa3, 0x4a, 0xff} // serving
	amberColor = color.RGBA{0xd9, 0x77, 0x06, 0xff} // degraded
	redColor   = color.RGBA{0xdc, 0x26, 0x26, 0xff} // nothing can serve
	greyColor  = color.RGBA{0x6b, 0x72, 0x80, 0xff} // paused
)

// drawMark renders the mark at size×size pixels with the square in bg.
// Each pixel averages 4×4 samples, which is enough anti-aliasing for both
// a 22 px tray and a 1024 px app icon.
func drawMark(size int, bg color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	const ss = 4
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var inSquare, inWhite int
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					x := (float64(px) + (float64(sx)+0.5)/ss) / float64(size)
					y := (float64(py) + (float64(sy)+0.5)/ss) / float64(size)
					if !inRoundedSquare(x, y) {
						continue
					}
					inSquare++
					if inLanes(x, y) {
						inWhite++
					}
				}
			}
			if inSquare == 0 {
				continue
			}
			// Premultiplied: white where the lanes are, bg elsewhere.
			n := float64(ss * ss)
			a := float64(inSquare) / n
			w := float64(inWhite) / n
			b := a - w
			img.SetRGBA(px, py, color.RGBA{
				R: uint8(math.Round(float64(bg.R)*b + 255*w)),
				G: uint8(math.Round(float64(bg.G)*b + 255*w)),
				B: uint8(math.Round(float64(bg.B)*b + 255*w)),
				A: uint8(math.Round(255 * a)),
			})
		}
	}
	return img
}

// inRoundedSquare is the background: a square with a small margin and
// rounded corners, in unit coordinates.
func inRoundedSquare(x, y float64) bool {
	const lo, hi, r = 0.04, 0.96, 0.2
	if x < lo || x > hi || y < lo || y > hi {
		return false
	}
	cx := math.Min(math.Max(x, lo+r), hi-r)
	cy := math.Min(math.Max(y, lo+r), hi-r)
	return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r
}

// inLanes is the white part: two short lanes and a long middle one that
// ends in an arrow head.
func inLanes(x, y float64) bool {
	const h = 0.05 // half a lane's height
	capsule := func(x0, x1, yc float64) bool {
		if y < yc-h || y > yc+h {
			return false
		}
		if x >= x0 && x <= x1 {
			return true
		}
		dx := math.Min(math.Abs(x-x0), math.Abs(x-x1))
		return dx*dx+(y-yc)*(y-yc) <= h*h
	}
	if capsule(0.22, 0.48, 0.27) || capsule(0.22, 0.48, 0.73) || capsule(0.22, 0.6, 0.5) {
		return true
	}
	// Arrow head: a triangle pointing right, from x 0.56 to 0.80.
	const ax0, ax1, half = 0.56, 0.80, 0.15
	if x < ax0 || x > ax1 {
		return false
	}
	return math.Abs(y-0.5) <= half*(ax1-x)/(ax1-ax0)
}

// markPNG encodes the mark as PNG.
func markPNG(size int, bg color.RGBA) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, drawMark(size, bg)); err != nil {
		// Encoding an in-memory RGBA image cannot fail.
		panic(err)
	}
	return buf.Bytes()
}

// icoFromPNG wraps a PNG in an ICO container, which Windows has accepted
// since Vista; Wails uses build/windows/icon.ico for the executable.
func icoFromPNG(p []byte, size int) []byte {
	var buf bytes.Buffer
	le16 := func(v int) { buf.WriteByte(byte(v)); buf.WriteByte(byte(v >> 8)) }
	le32 := func(v int) { le16(v & 0xffff); le16(v >> 16) }
	le16(0) // reserved
	le16(1) // type: icon
	le16(1) // one image
	dim := size
	if dim >= 256 {
		dim = 0 // 0 means 256 in an ICO directory entry
	}
	buf.WriteByte(byte(dim))
	buf.WriteByte(byte(dim))
	buf.WriteByte(0) // no palette
	buf.WriteByte(0) // reserved
	le16(1)          // colour planes
	le16(32)         // bits per pixel
	le32(len(p))
	le32(6 + 16) // offset of the image data
	buf.Write(p)
	return buf.Bytes()
}
