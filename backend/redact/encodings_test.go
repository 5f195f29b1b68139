package redact_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"freelane/backend/redact"
)

// key is 28 characters, like many providers' keys.
const key = "sk-LEAKME-0123456789abcdefgh"

// every writes each byte of s with enc.
func every(s, format string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

func mixedCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		if i%2 == 0 {
			b[i] = strings.ToUpper(string(c))[0]
		} else {
			b[i] = strings.ToLower(string(c))[0]
		}
	}
	return string(b)
}

// TestEncodings writes the key in each way a server or a person might and
// checks that the copy is gone, the text around it is kept, and the
// independent checker finds nothing.
func TestEncodings(t *testing.T) {
	r := redact.New(redact.Key(key))
	cases := map[string]string{
		"exact":                  key,
		"upper case":             strings.ToUpper(key),
		"lower case":             strings.ToLower(key),
		"mixed case":             mixedCase(key),
		"%2D":                    strings.ReplaceAll(key, "-", "%2D"),
		"%2d":                    strings.ReplaceAll(key, "-", "%2d"),
		"every byte %XX":         every(key, "%%%02X"),
		"every byte %xx":         every(key, "%%%02x"),
		`\u002d`:                 strings.ReplaceAll(key, "-", `\u002d`),
		`every byte \uXXXX`:      every(key, `\u%04X`),
		`every byte \uxxxx`:      every(key, `\u%04x`),
		"JSON escapes escaped":   every(key, `\\u%04x`),
		"URL escapes escaped":    every(key, "%%25%02x"),
		"escapes of both kinds":  `sk%2D` + `\u004c` + `EAKME\u002d0123%345678` + `\u0039abcdefgh`,
		"upper case and escaped": every(strings.ToUpper(key), `\u%04x`),
		"first 26 of 28":         key[:26],
		"last 26 of 28":          key[2:],
		"middle 26 of 28":        key[1:27],
		"16 of 28":               key[5:21],
		"16 of 28, upper case":   strings.ToUpper(key[12:]),
	}
	for a, prefix := range []string{"", "u", "us"} {
		raw := []byte(prefix + key)
		for name, enc := range map[string]*base64.Encoding{
			"std padded": base64.StdEncoding, "std raw": base64.RawStdEncoding,
			"url padded": base64.URLEncoding, "url raw": base64.RawURLEncoding,
		} {
			cases[fmt.Sprintf("base64 %s, alignment %d", name, a)] = enc.EncodeToString(raw)
		}
	}
	cases["basic auth"] = "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+key))
	cases["basic auth, %-escaped"] = every("Basic "+base64.StdEncoding.EncodeToString([]byte("user:"+key)), "%%%02X")
	cases["base64 of a 16-character run"] = base64.StdEncoding.EncodeToString([]byte("x" + key[4:20]))
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := "before <" + c + "> after"
			got := r.String(in)
			if l := leak(got, key); l != "" {
				t.Fatalf("%s", l)
			}
			if !strings.Contains(got, redact.KeyMarker) || !strings.HasPrefix(got, "before <") || !strings.HasSuffix(got, "> after") {
				t.Fatalf("got %q", got)
			}
			if b := string(r.Bytes([]byte(in))); b != got {
				t.Fatalf("Bytes gave %q, String %q", b, got)
			}
		})
	}
}

// TestPlainEncodingsKeepTheRest checks exactly what is replaced where the
// copy has clear edges.
func TestPlainEncodingsKeepTheRest(t *testing.T) {
	r := redact.New(redact.Key(key))
	for in, want := range map[string]string{
		"a " + strings.ToUpper(key) + " b":                      "a [redacted key] b",
		"a " + every(key, "%%%02x") + " b":                      "a [redacted key] b",
		"a " + every(key, `\u%04X`) + " b":                      "a [redacted key] b",
		"a " + key[:26] + "ZZ b":                                "a [redacted key]ZZ b",
		"a " + key[:15] + " b":                                  "a " + key[:15] + " b",
		"q=" + key + "&r=1":                                     "q=[redacted key]&r=1",
		"http://h/p?key=" + strings.ReplaceAll(key, "-", "%2D"): "http://h/p?key=[redacted key]",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// A fragment shorter than RunLen is not a copy: it is too likely to be
// ordinary text.
func TestFifteenCharactersStay(t *testing.T) {
	r := redact.New(redact.Key(key))
	for _, in := range []string{key[:15], key[13:], strings.ToUpper(key[3:18])} {
		if got := r.String(in); got != in {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
}

func TestSplitByEscapesInsideJSON(t *testing.T) {
	r := redact.New(redact.Key(key))
	body := `{"error":{"message":"bad key sk\u002dLEA\u004BME-0123\u0034567\/89abcdefgh?","n":1.50}}`
	// The \/ stands for '/', which is not in the key: the run before it
	// (22 characters) and the one after it (11) are judged on their own.
	got := r.Bytes([]byte(body))
	var v struct {
		Error struct {
			Message string      `json:"message"`
			N       json.Number `json:"n"`
		} `json:"error"`
	}
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if v.Error.Message != "bad key [redacted key]/89abcdefgh?" || v.Error.N != "1.50" {
		t.Errorf("got %s", got)
	}

	body = `{"m":"` + every(key[:10], `\u%04x`) + key[10:20] + every(key[20:], "%%%02X") + `"}`
	got = r.Bytes([]byte(body))
	if string(got) != `{"m":"[redacted key]"}` {
		t.Errorf("got %s", got)
	}
}

// Secrets with a slash, a quote or a space, as header values may have.
func TestJSONAndURLSpellingsOfPunctuation(t *testing.T) {
	const hdr = "Bearer tok/en+with \"odd\" bits"
	r := redact.New(redact.Header(hdr))
	for _, in := range []string{
		`Bearer tok\/en+with \"odd\" bits`,
		"Bearer+tok%2Fen%2Bwith+%22odd%22+bits",
		"Bearer%20tok%2fen%2bwith%20%22odd%22%20bits",
		strings.ToUpper(hdr),
	} {
		got := r.String("<" + in + ">")
		if got != "<[redacted]>" {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
}

// The base64 alphabets differ in two characters; a secret whose encoding
// holds both shows that either is read.
func TestBase64Alphabets(t *testing.T) {
	const odd = "t0k~~~???>>>-xyz-0123456789"
	r := redact.New(redact.Key(odd))
	for a, prefix := range []string{"", "a", "ab"} {
		std := base64.StdEncoding.EncodeToString([]byte(prefix + odd))
		url := base64.RawURLEncoding.EncodeToString([]byte(prefix + odd))
		if !strings.ContainsAny(std, "+/") || !strings.ContainsAny(url, "-_") {
			t.Fatalf("alignment %d: the encodings %q and %q do not show the alphabets apart", a, std, url)
		}
		for _, in := range []string{std, url, `"` + strings.ReplaceAll(std, "/", `\/`) + `"`, every(std, "%%%02x")} {
			got := r.String(in)
			if l := leak(got, odd); l != "" || !strings.Contains(got, redact.KeyMarker) {
				t.Errorf("alignment %d: String(%q) = %q %s", a, in, got, l)
			}
		}
	}
}

func TestOverlappingAndAdjacent(t *testing.T) {
	const a = "alpha-secret-0123456789"
	const b = "0123456789-bravo-secret"
	r := redact.New(redact.Key(a), redact.Header(b))
	for in, want := range map[string]string{
		// b starts inside a: one span, named for the key.
		"<alpha-secret-0123456789-bravo-secret>": "<[redacted key]>",
		// Adjacent copies stay two.
		"<" + a + a + ">":                  "<[redacted key][redacted key]>",
		"<" + a + strings.ToUpper(a) + ">": "<[redacted key][redacted key]>",
		"<" + b + "|" + a + ">":            "<[redacted]|[redacted key]>",
		"<" + a + every(b, "%%%02X") + ">": "<[redacted key][redacted]>",
		"<" + a[:20] + a + ">":             "<[redacted key][redacted key]>",
		"<" + a + " " + a + " " + a + ">":  "<[redacted key] [redacted key] [redacted key]>",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSecretsSharingAPrefix(t *testing.T) {
	const a = "sk-proj-SHAREDPREFIX-aaaaaaaaaaaa"
	const b = "sk-proj-SHAREDPREFIX-bbbbbbbbbbbb"
	r := redact.New(redact.Key(a), redact.Header(b))
	for in, want := range map[string]string{
		"<" + a + ">":                     "<[redacted key]>",
		"<" + b + ">":                     "<[redacted key]>",
		"<" + b[8:] + ">":                 "<[redacted]>",
		"<sk-proj-SHAREDPREFIX-cccccccc>": "<[redacted key]cccccccc>",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// Secrets of MinLen to RunLen-1 characters count whole only, in every
// encoding.
func TestShortSecretsWhole(t *testing.T) {
	const short = "Sh0rtKey9"
	r := redact.New(redact.Key(short))
	for _, in := range []string{
		short, strings.ToLower(short), every(short, "%%%02X"), every(short, `\u%04x`),
		base64.StdEncoding.EncodeToString([]byte(short)),
		base64.RawURLEncoding.EncodeToString([]byte("x" + short)),
		base64.StdEncoding.EncodeToString([]byte("u:" + short)),
	} {
		if got := r.String("<" + in + ">"); !strings.Contains(got, redact.KeyMarker) || leak(got, short) != "" {
			t.Errorf("String(%q) = %q", in, got)
		}
	}
	if got := r.String("Sh0rtKey"); got != "Sh0rtKey" {
		t.Errorf("a part of a short secret was replaced: %q", got)
	}
}

// Text with no candidate is read once and nothing is allocated.
func TestNoCandidateAllocatesNothing(t *testing.T) {
	var secrets []redact.Secret
	for i := range 50 {
		secrets = append(secrets, redact.Key(fmt.Sprintf("sk-%02d-%s", i, strings.Repeat("0123456789abcdef", 2))))
	}
	r := redact.New(secrets...)
	s := strings.Repeat(`{"delta":{"content":"caf\u00e9 100%25 \"ok\"\n"}} `, 30)
	b := []byte(s)
	if n := testing.AllocsPerRun(100, func() { _ = r.String(s) }); n != 0 {
		t.Errorf("String allocated %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = r.Bytes(b) }); n != 0 {
		t.Errorf("Bytes allocated %v times", n)
	}
	if got := r.Bytes(b); &got[0] != &b[0] {
		t.Error("Bytes copied a text without a secret")
	}
}

// Changing the set takes effect at once, and old secrets are forgotten.
func TestSetReplaces(t *testing.T) {
	r := redact.New(redact.Key(key))
	r.Set([]redact.Secret{redact.Key("another-secret-key-0123456789")})
	if got := r.String(key); got != key {
		t.Errorf("an old secret is still redacted: %q", got)
	}
	if got := r.String("another-secret-key-0123456789"); got != redact.KeyMarker {
		t.Errorf("got %q", got)
	}
}
