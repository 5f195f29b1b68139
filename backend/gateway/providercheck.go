package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"freelane/backend/api"
	"freelane/backend/config"
	"freelane/backend/control"
	"freelane/backend/llm"
	"freelane/backend/modellist"
	"freelane/backend/redact"
	"freelane/backend/upstream"
)

// listWait bounds one model list read made to try a key, so that a server
// that takes the connection and never answers is reported in words while
// the dashboard still waits.
const listWait = 15 * time.Second

// maxBaseURL bounds a base URL sent to list models; real ones are short.
const maxBaseURL = 2048

// AddProvider adds a provider set up by hand as one from the catalog is
// added: its key is tried against its model list first (or, where it has
// none, with one tiny request), a refused key is refused, and a server
// that cannot be reached is added only when the input says so.
func (a adminView) AddProvider(ctx context.Context, in control.ProviderInput) (control.ProviderView, error) {
	g := a.g
	plan, err := g.control.PlanAdd(in)
	if err != nil {
		return control.ProviderView{}, err
	}
	checked, err := g.tryProvider(ctx, plan.After, in.UnreachableOK, "add it anyway")
	if err != nil {
		return control.ProviderView{}, err
	}
	view, err := g.control.AddProvider(ctx, in)
	if err != nil {
		return view, err
	}
	g.markChecked(&view, checked)
	return view, nil
}

// markChecked records whether the key of a provider just stored was
// tried, for the dashboard to say "not checked yet" until its server
// answers.
func (g *Gateway) markChecked(view *control.ProviderView, checked bool) {
	if checked {
		g.feed.unchecked.forget(view.Name)
		return
	}
	g.feed.unchecked.add(view.Name)
	view.Key.Unchecked = view.Key.Set
}

// UpdateProvider edits a provider. An edit that changes where or how its
// requests go (kind, base URL, headers, key) tries the key as an add does;
// other edits (models, tier, limits) are stored at once.
func (a adminView) UpdateProvider(ctx context.Context, name string, in control.ProviderInput) (control.ProviderView, error) {
	g := a.g
	plan, err := g.control.PlanUpdate(name, in)
	if err != nil {
		return control.ProviderView{}, err
	}
	if !plan.Reaches() {
		return g.control.UpdateProvider(ctx, name, in)
	}
	checked, err := g.tryProvider(ctx, plan.After, in.UnreachableOK, "save it anyway")
	if err != nil {
		return control.ProviderView{}, err
	}
	view, err := g.control.UpdateProvider(ctx, name, in)
	if err != nil {
		return view, err
	}
	g.markChecked(&view, checked)
	return view, nil
}

// ProviderModels reads the model list of a provider's server, for the
// form that adds or edits a provider to offer its models.
func (a adminView) ProviderModels(ctx context.Context, in api.ModelListInput) (api.ModelList, error) {
	g := a.g
	kind := cmp.Or(strings.TrimSpace(in.Kind), config.KindOpenAI)
	d, ok := g.dialectOf(kind)
	if !ok {
		return api.ModelList{}, &control.Error{Status: http.StatusBadRequest, Param: "kind",
			Message: fmt.Sprintf("kind must be %s, got %q", oneOf(g.dialects.Kinds()), truncate(kind, 40))}
	}
	base := strings.TrimSpace(in.BaseURL)
	if len(base) > maxBaseURL {
		return api.ModelList{}, &control.Error{Status: http.StatusBadRequest, Param: "base_url", Message: fmt.Sprintf("the base URL is longer than %d characters", maxBaseURL)}
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return api.ModelList{}, &control.Error{Status: http.StatusBadRequest, Param: "base_url", Message: "the base URL must be a full http:// or https:// address, such as https://api.groq.com/openai/v1"}
	}
	key := strings.TrimSpace(in.APIKey)
	if len(key) > maxKey {
		return api.ModelList{}, &control.Error{Status: http.StatusBadRequest, Param: "api_key", Message: fmt.Sprintf("the key is longer than %d characters; paste the key alone", maxKey)}
	}
	p := config.Provider{Name: cmp.Or(in.Provider, urlHost(base)), Kind: kind, BaseURL: base, APIKey: key}
	if key == "" && in.Provider != "" {
		eff, err := g.control.Effective()
		if err != nil {
			return api.ModelList{}, err
		}
		stored, ok := eff.Provider(in.Provider)
		if !ok {
			return api.ModelList{}, &control.Error{Status: http.StatusNotFound, Param: "provider", Message: fmt.Sprintf("there is no provider %q", truncate(in.Provider, 64))}
		}
		// The stored key and headers go only where they were given for.
		if stored.Kind == kind && sameBase(stored.BaseURL, base) {
			p.APIKey, p.Headers, p.Keyless = stored.APIKey, stored.Headers, stored.Keyless
		}
	}
	listed, err := g.readList(ctx, p)
	switch {
	case err == nil:
		out := api.ModelList{Listed: true, Models: make([]api.ListedModel, 0, len(listed)),
			Message: fmt.Sprintf("%s lists %d models", urlHost(base), len(listed))}
		for _, l := range listed {
			out.Models = append(out.Models, api.ListedModel{ID: l.ID, Name: l.Name, Context: l.Context, MaxOutput: l.MaxOutput,
				Chat: l.Chat, Priced: l.Priced, Free: l.Free})
		}
		return out, nil
	case errors.Is(err, modellist.ErrNoList) && d.Outbound.Models == nil:
		return api.ModelList{Models: []api.ListedModel{},
			Message: fmt.Sprintf("servers of kind %s have no model list; type the model ids", kind)}, nil
	case errors.Is(err, modellist.ErrNoList):
		path, _, _ := strings.Cut(d.Outbound.Models.Path(), "?")
		return api.ModelList{Models: []api.ListedModel{},
			Message: fmt.Sprintf("%s has no model list (GET %s%s answered %s); type the model ids", urlHost(base), strings.TrimRight(base, "/"), path, statusWords(err))}, nil
	}
	if f := g.judge(p, err); f != nil {
		if f.refused && p.APIKey == "" {
			return api.ModelList{}, &control.Error{Status: http.StatusBadRequest, Param: "api_key", Code: api.CodeKeyRefused,
				Message: fmt.Sprintf("%s lists its models only with a key (%s): paste the key first", urlHost(base), f.why)}
		}
		return api.ModelList{}, f.asError("")
	}
	// A busy server read the key but gave no list.
	return api.ModelList{}, &control.Error{Status: http.StatusBadGateway, Param: "base_url", Code: api.CodeProviderUnreachable,
		Message: fmt.Sprintf("%s is busy and gave no model list (%s); try again in a minute, or type the model ids", urlHost(base), statusWords(err))}
}

// tryProvider tries the key of p, a provider about to be stored: against
// its model list, or with one tiny request to its first model where the
// server has no list. It returns false with no error only when the server
// cannot be reached and unreachableOK says to go on: the key is stored
// untried. A provider with no key yet has nothing to try. A server
// that cannot be reached is an error unless unreachableOK; anyway is what
// the error offers to do instead.
func (g *Gateway) tryProvider(ctx context.Context, p config.Provider, unreachableOK bool, anyway string) (bool, error) {
	if p.APIKey == "" && !p.Keyless {
		return true, nil
	}
	_, err := g.readList(ctx, p)
	if errors.Is(err, modellist.ErrNoList) && len(p.Models) > 0 {
		err = g.tryRequest(ctx, p)
	}
	if err == nil || errors.Is(err, modellist.ErrNoList) {
		return true, nil
	}
	f := g.judge(p, err)
	switch {
	case f == nil:
		return true, nil
	case f.refused || !unreachableOK:
		return false, f.asError(anyway)
	}
	g.log.Info("a provider is stored without its key being tried: its server could not be reached, and the user chose to go on",
		"provider", p.Name, "reason", f.why)
	return false, nil
}

// readList reads the model list of p, bounded by listWait.
func (g *Gateway) readList(ctx context.Context, p config.Provider) ([]modellist.Listed, error) {
	ctx, cancel := context.WithTimeout(ctx, listWait)
	defer cancel()
	return g.pool.ReadList(ctx, p)
}

// tryRequest sends one tiny request to the first model of p, for a server
// that has no model list.
func (g *Gateway) tryRequest(ctx context.Context, p config.Provider) error {
	// The key is not in the gateway's redactor until the provider is
	// stored, so this client and its log lines get one that knows it.
	red := redact.New(secrets(&config.Config{Providers: []config.Provider{p}})...)
	d, ok := g.dialectOf(p.Kind)
	if !ok {
		return fmt.Errorf("no dialect speaks the provider kind %q", p.Kind)
	}
	c := upstream.New(upstream.Options{Name: p.Name, BaseURL: p.BaseURL, APIKey: p.APIKey, Headers: p.Headers, Dialect: d, Codecs: g.dialects,
		ConnectTimeout: p.Timeouts.Connect, HeaderTimeout: p.Timeouts.Header, FirstTokenTimeout: p.Timeouts.FirstToken, IdleTimeout: p.Timeouts.Idle,
		Logger: slog.New(redact.Handler(g.log.Handler(), red)), Clock: g.clock, Redactor: red})
	defer c.CloseIdle()
	ctx, cancel := context.WithTimeout(ctx, listWait)
	defer cancel()
	_, err := c.Complete(ctx, testRequest, p.Models[0].ID)
	return err
}

// checkFailure is why a key could not be taken: the provider refused it,
// or its server could not be reached or gave no usable answer.
type checkFailure struct {
	name, host string
	// refused is set when the provider refused the key (or, for one that
	// needs no key, asked for one); answered when the server answered,
	// but not in a way that tries the key.
	refused, answered, keyless bool
	// why is the reason in words, without the key.
	why string
}

// judge reads the error of a list read or a tiny request made with the
// key of p: nil when the answer shows the key was read (a busy server, or
// a request refused for something else than the key).
func (g *Gateway) judge(p config.Provider, err error) *checkFailure {
	f := &checkFailure{name: p.Name, host: urlHost(p.BaseURL), keyless: p.Keyless && p.APIKey == ""}
	red := redact.New(secrets(&config.Config{Providers: []config.Provider{p}})...)
	var me *modellist.Error
	var le *llm.Error
	switch {
	case errors.Is(err, modellist.ErrKeyRejected):
		f.refused, f.why = true, statusWords(err)
	case errors.As(err, &me) && me.Status == http.StatusTooManyRequests:
		return nil
	case errors.As(err, &me):
		f.answered, f.why = true, fmt.Sprintf("its model list answered %s", statusWords(err))
	case errors.As(err, &le) && le.Class == llm.Credential:
		f.refused, f.why = true, le.Message
	case errors.As(err, &le) && le.Status == http.StatusNotFound:
		// Neither a model list nor the chat path: most likely the base
		// URL is not the API's.
		f.answered, f.why = true, fmt.Sprintf("it has no model list and answered the test request with %s; check the base URL and the model id", le.Message)
	case errors.As(err, &le) && (le.Class == llm.RateLimited || le.Class == llm.Caller):
		// Busy, or the request was refused for something else than the
		// key (a parameter, say): the key was read and taken.
		return nil
	case errors.As(err, &le) && le.Status != 0:
		f.answered, f.why = true, fmt.Sprintf("it has no model list and answered the test request with %s", le.Message)
	case errors.As(err, &le) && le.Err != nil:
		f.why = unreachableWords(le.Err)
	default:
		var te *modellist.TransportError
		f.answered = !errors.As(err, &te) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
		f.why = unreachableWords(err)
	}
	f.why = red.String(f.why)
	if p.APIKey != "" && strings.Contains(f.why, p.APIKey) {
		// A key too short for the redactor's patterns.
		f.why = "its message is withheld because it repeats the key"
	}
	return f
}

// asError is the failure as the API answers it; anyway is what the user
// may do instead of fixing it, "" for nothing.
func (f *checkFailure) asError(anyway string) *control.Error {
	switch {
	case f.refused && f.keyless:
		return &control.Error{Status: http.StatusBadRequest, Param: "api_key", Code: api.CodeKeyRefused,
			Message: fmt.Sprintf("%s wants a key (%s); paste its key, or check the base URL.", f.name, f.why)}
	case f.refused:
		return &control.Error{Status: http.StatusBadRequest, Param: "api_key", Code: api.CodeKeyRefused,
			Message: fmt.Sprintf("%s refused the key (%s); check that the whole key was pasted and that it is a key of this provider.", f.name, f.why)}
	}
	msg := fmt.Sprintf("FreeLane could not reach %s: %s. The key was not tried", f.host, f.why)
	if f.answered {
		msg = fmt.Sprintf("%s gave no usable answer: %s. The key was not tried", f.host, f.why)
	}
	if anyway != "" {
		msg += fmt.Sprintf("; correct the base URL, or %s: it serves once the server answers", anyway)
	}
	msg += "."
	return &control.Error{Status: http.StatusBadGateway, Param: "base_url", Code: api.CodeProviderUnreachable, Message: msg}
}

// unreachableWords says why a server could not be reached, in words
// rather than as Go's network error, whose text names the dialer, the
// local address and the system call. The words speak of the server as
// "it": the message they go in names it.
func unreachableWords(err error) string {
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var netErr net.Error
	var te *modellist.TransportError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return fmt.Sprintf("it did not answer within %s", listWait)
	case errors.As(err, &dns) && dns.IsNotFound:
		return fmt.Sprintf("the name %s is not known (no DNS record has it); check its spelling", dns.Name)
	case errors.As(err, &dns):
		return fmt.Sprintf("the name %s could not be looked up; check the network", dns.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing is listening there (the connection was refused); check that the server runs and that the port is right"
	case errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH):
		return "this machine has no route to it (the network is unreachable)"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "it closed the connection without answering"
	case errors.As(err, &cert) || errors.As(err, &unknown) || errors.As(err, &hostname):
		return "its TLS certificate is not valid for that name, or not trusted"
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "it speaks plain http, not https: start the base URL with http://"
	case errors.Is(err, modellist.ErrTooLarge):
		return "its model list is larger than FreeLane reads"
	case errors.Is(err, context.Canceled):
		return "the check was cancelled"
	case errors.As(err, &te):
		return "the connection failed or broke"
	}
	// What modellist says of a list it could not read (not JSON, say) is
	// already in words, and redacted.
	return strings.TrimPrefix(err.Error(), "modellist: ")
}

// statusWords is an HTTP answer of a model list, as "HTTP 401 (message)".
func statusWords(err error) string {
	var me *modellist.Error
	if !errors.As(err, &me) {
		return "with an error"
	}
	msg := strings.TrimRight(strings.TrimSpace(me.Message), " :;,.")
	if msg == "" {
		msg = http.StatusText(me.Status)
	}
	if msg == "" {
		return fmt.Sprintf("HTTP %d", me.Status)
	}
	return fmt.Sprintf("HTTP %d (%s)", me.Status, msg)
}

// oneOf lists choices as a sentence does: "a", "a or b", "a, b or c".
func oneOf(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// urlHost is the host of a base URL, or the URL itself when it has none;
// it is what messages name, since a URL may carry a password.
func urlHost(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return u.Host
	}
	return "the server"
}

// sameBase reports whether two base URLs are the same address, but for a
// trailing slash.
func sameBase(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }

// truncate shortens s to n bytes for a message, at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
