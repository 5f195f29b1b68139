package gateway_test

import "regexp"

// rawPatterns are what Go's and the wire's own error text look like; a
// message a person reads says what happened in words instead.
var rawPatterns = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a dial error", regexp.MustCompile(`dial tcp|dial unix`)},
	{"a DNS error", regexp.MustCompile(`no such host|lookup \S+ on `)},
	{"a socket error", regexp.MustCompile(`connect: connection refused|read: connection reset|write: broken pipe`)},
	{"an EOF", regexp.MustCompile(`\bEOF\b`)},
	{"a context error", regexp.MustCompile(`context deadline exceeded|context canceled`)},
	{"an HTTP status with a colon", regexp.MustCompile(`HTTP \d+:`)},
	{"a failure class prefix", regexp.MustCompile(`\b(credential|transient|rate_limited|caller|too_long): `)},
	{"a Go request error", regexp.MustCompile(`(Get|Post|Put) "https?://`)},
	{"a package prefix", regexp.MustCompile(`\b(modellist|upstream|net/http|x509|tls): `)},
	{"a formatting error", regexp.MustCompile(`%!|<nil>|%[vsdqw]\b`)},
	{"a trailing colon", regexp.MustCompile(`:\s*$`)},
	{"a leading comma", regexp.MustCompile(`^\s*,`)},
	{"an empty parenthesis", regexp.MustCompile(`\(\s*\)`)},
}

// rawErrorText names the first raw error text in msg, or "".
func rawErrorText(msg string) string {
	for _, p := range rawPatterns {
		if p.re.MatchString(msg) {
			return p.what + " (" + p.re.FindString(msg) + ")"
		}
	}
	return ""
}
