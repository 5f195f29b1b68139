package main

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the icon files in build/ from the drawing")

// iconFiles are the files in build/ drawn by drawMark: the app icon Wails
// and the Linux .desktop file use, and the Windows executable's icon.
var iconFiles = map[string]func() []byte{
	"../build/appicon.png":        func() []byte { return markPNG(1024, brandColor) },
	"../build/windows/icon.ico":   func() []byte { return icoFromPNG(markPNG(256, brandColor), 256) },
	"../build/linux/freelane.png": func() []byte { return markPNG(256, brandColor) },
}

// TestIconFilesMatchTheDrawing keeps the app icon and the tray icons one
// artwork: the files in build/ must be what drawMark draws (go test ./app
// -run TestIconFiles -update rewrites them after a change to the drawing).
func TestIconFilesMatchTheDrawing(t *testing.T) {
	for path, draw := range iconFiles {
		want := draw()
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./app -run TestIconFiles -update)", err)
		}
		if !bytes.Equal(got, want) && !samePixels(t, got, want) {
			t.Errorf("%s is not the current drawing; run go test ./app -run TestIconFiles -update", path)
		}
	}
}

// samePixels compares two PNGs (or ICOs holding a PNG) by their pixels, so
// a different PNG encoder does not fail the test.
func samePixels(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(p []byte) image.Image {
		if len(p) > 22 && p[0] == 0 && p[2] == 1 {
			p = p[22:]
		}
		img, err := png.Decode(bytes.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	ia, ib := decode(a), decode(b)
	if ia.Bounds() != ib.Bounds() {
		return false
	}
	for y := ia.Bounds().Min.Y; y < ia.Bounds().Max.Y; y++ {
		for x := ia.Bounds().Min.X; x < ia.Bounds().Max.X; x++ {
			r1, g1, b1, a1 := ia.At(x, y).RGBA()
			r2, g2, b2, a2 := ib.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				return false
			}
		}
	}
	return true
}

func TestMarkShape(t *testing.T) {
	img := drawMark(64, redColor)
	// Corners are transparent, the square's edge is the state colour and
	// the middle lane is white.
	if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
		t.Error("corner is not transparent")
	}
	if c := img.RGBAAt(8, 32); c != redColor {
		t.Errorf("left edge is %v, want the state colour", c)
	}
	if c := img.RGBAAt(28, 32); c.R != 255 || c.G != 255 || c.B != 255 {
		t.Errorf("middle lane is %v, want white", c)
	}
}
