// Package modellist reads a provider's live model list: the one cheap call
// that shows whether a pasted key works, and the daily look that finds the
// models a provider added or withdrew. It does the HTTP the same way for
// every dialect (bounded bodies and lists, no redirects followed, the key
// never quoted back, pages followed only on the provider's host); where
// the list is, how the request carries the key, how a page reads and what
// else refuses a key come from the dialect's protocol.ModelList.
package modellist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"freelane/backend/protocol"
	"freelane/backend/redact"
)

// Limits on what one Fetch reads. A list is data from the network and is
// bounded like every other input: the largest real lists (OpenRouter,
// Together) hold a few hundred models in well under a megabyte.
const (
	// MaxBody is the largest response body read for one page.
	MaxBody = 8 << 20
	// MaxModels is the most entries a whole list may hold.
	MaxModels = 5000
	// MaxPages is the most pages one list is read in.
	MaxPages = 10
	// MaxIDLen is the longest model id kept; longer ones are skipped, as
	// no real provider names a model that way and such an id would only
	// bloat the rows and pages it ends up in.
	MaxIDLen = 256
	// maxMessage bounds the provider's own words quoted in an error.
	maxMessage = 300
)

// ErrKeyRejected marks a list request the provider refused for its key:
// HTTP 401 or 403, or an answer the dialect's list reader says refuses it.
var ErrKeyRejected = errors.New("the provider refused the key")

// ErrNoList marks a provider whose list endpoint does not exist (HTTP 404
// or 405), or whose dialect has no model list: the key cannot be verified
// this way and the configured models stay as they are.
var ErrNoList = errors.New("the provider has no model list")

// ErrTooLarge marks a list beyond MaxBody, MaxModels or MaxPages. The list
// is refused whole rather than cut, since a cut list would make the models
// past the cut look withdrawn.
var ErrTooLarge = errors.New("the model list is larger than FreeLane reads")

// Listed is one model as a provider's list describes it, in the neutral
// form every dialect's list reader gives. Fields the list does not give
// are zero.
type Listed = protocol.ListedModel

// Fetch reads a provider's whole model list with the list reader of its
// dialect (nil for a dialect without a list: ErrNoList). baseURL is the
// provider's base URL as configured, the one chat paths are appended to;
// the list's path is appended to it the same way. key is sent as the
// dialect sends it, never in the URL, and may be empty for local servers;
// headers are the provider's extra headers, sent on every page.
//
// The caller bounds the time through ctx. Redirects are refused, so the
// key and headers reach base_url's host and nowhere else; a 3xx is an
// error naming where the provider pointed. Errors never contain the key
// or a header value: a refused key is ErrKeyRejected, a missing endpoint
// ErrNoList, an oversized list ErrTooLarge, other answers an *Error and no
// answer at all a *TransportError (or the context's error).
func Fetch(ctx context.Context, c *http.Client, models protocol.ModelList, baseURL, key string, headers map[string]string) ([]Listed, error) {
	if models == nil {
		return nil, fmt.Errorf("modellist: the provider's dialect has no model list: %w", ErrNoList)
	}
	base, err := parseBase(baseURL)
	if err != nil {
		return nil, err
	}
	if c == nil {
		c = http.DefaultClient
	}
	hc := *c
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	secrets := []redact.Secret{redact.Key(key)}
	for _, v := range headers {
		secrets = append(secrets, redact.Header(v))
	}
	f := &fetcher{
		http:    &hc,
		base:    base,
		models:  models,
		key:     key,
		headers: headers,
		red:     redact.New(secrets...),
	}
	return f.read(ctx)
}

func parseBase(baseURL string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		// url.Parse quotes the whole URL, which may carry a password.
		return nil, errors.New("modellist: the base URL does not parse")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("modellist: the base URL must be an absolute http or https URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("modellist: the base URL must not have a query or fragment")
	}
	return u, nil
}

// Error is a list request that failed with an HTTP status. It wraps
// ErrKeyRejected, ErrNoList or nothing.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Host is the provider's host.
	Host string
	// Message is the provider's own explanation, redacted and shortened,
	// or a short reason of FreeLane's when the provider gave none.
	Message string
	kind    error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "modellist: %s answered HTTP %d", e.Host, e.Status)
	if e.kind != nil {
		b.WriteString(": ")
		b.WriteString(e.kind.Error())
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the sentinel the failure is, if any.
func (e *Error) Unwrap() error { return e.kind }

// TransportError is a list request that got no answer: the connection
// could not be made or broke. Its text is redacted; Unwrap gives the
// network error itself, so that a caller can tell a refused connection, an
// unknown host or a timeout apart with errors.Is and errors.As. The
// network error's own text is not redacted and must not be shown.
type TransportError struct {
	// Host is the provider's host.
	Host string
	// Message is the network error's text, redacted.
	Message string
	// Err is the network error.
	Err error
}

func (e *TransportError) Error() string { return "modellist: reading " + e.Host + ": " + e.Message }

// Unwrap returns the network error.
func (e *TransportError) Unwrap() error { return e.Err }

type fetcher struct {
	http    *http.Client
	base    *url.URL
	models  protocol.ModelList
	key     string
	headers map[string]string
	red     *redact.Redactor
}

// firstURL is the base URL with the list's path appended, and the first
// page's query.
func (f *fetcher) firstURL() (*url.URL, error) {
	path, query, _ := strings.Cut(f.models.Path(), "?")
	u := *f.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	if f.base.RawPath != "" {
		u.RawPath = strings.TrimRight(f.base.RawPath, "/") + path
	}
	u.RawQuery = query
	if _, err := url.ParseQuery(query); err != nil {
		return nil, fmt.Errorf("modellist: the list's query does not parse: %w", err)
	}
	return &u, nil
}

// get reads one page, bounded, and turns a failing status into an error.
func (f *fetcher) get(ctx context.Context, u *url.URL) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("modellist: building the request: %w", err)
	}
	for k, v := range f.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "application/json")
	f.models.Header(req.Header, f.key)
	resp, err := f.http.Do(req)
	if err != nil {
		// The URL in a transport error holds no key: keys travel in
		// headers. The redactor still runs, for a key pasted into the
		// base URL by mistake.
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("modellist: reading %s: %w", u.Host, ctxErr)
		}
		return nil, &TransportError{Host: u.Host, Message: f.red.String(err.Error()), Err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.ContentLength > MaxBody {
		return nil, fmt.Errorf("modellist: %s sent %d bytes, over the %d-byte limit: %w", u.Host, resp.ContentLength, MaxBody, ErrTooLarge)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("modellist: reading %s: %w", u.Host, ctxErr)
		}
		return nil, &TransportError{Host: u.Host, Message: f.red.String(err.Error()), Err: err}
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("modellist: %s sent more than the %d-byte limit: %w", u.Host, MaxBody, ErrTooLarge)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return body, nil
	}
	return nil, f.statusError(u, resp, body)
}

func (f *fetcher) statusError(u *url.URL, resp *http.Response, body []byte) error {
	e := &Error{Status: resp.StatusCode, Host: u.Host}
	msg, _ := protocol.ErrorText(body)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		e.kind = ErrKeyRejected
	case f.models.RefusesKey(resp.StatusCode, body):
		e.kind = ErrKeyRejected
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		e.kind = ErrNoList
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		where := "another address"
		if loc, err := u.Parse(resp.Header.Get("Location")); err == nil && loc.Host != "" {
			where = loc.Scheme + "://" + loc.Host + loc.Path
		}
		msg = "it redirected to " + where + ", which is not followed so that the key goes to the base URL only; set the base URL to where the provider points"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	msg = f.red.String(msg)
	if f.key != "" && strings.Contains(msg, f.key) {
		// A key too short for the redactor's patterns: the message is
		// withheld rather than quoted with the key in it.
		msg = "the provider's message is withheld because it repeats the key"
	}
	e.Message = truncate(strings.Join(strings.Fields(msg), " "), maxMessage)
	return e
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
