package gemini

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"freelane/backend/llm"
	"freelane/backend/protocol"
	"freelane/backend/tokens"
)

// Explicit prompt caching: a provider with explicit_cache on has the
// prefix of a request, up to the client's last cache breakpoint, put into
// a cachedContents resource, and the request refers to it. Google bills
// the resource's storage by the hour and its reads at a fraction of the
// input price; it refuses a cache below a model's minimum size.

// cachePath is the collection caches are created in, below the base URL.
const cachePath = "/cachedContents"

// Settings of the explicit cache.
const (
	// defaultCacheTTL is how long a cache lives when the provider sets no
	// cache lifetime, the same as the router's default.
	defaultCacheTTL = 5 * time.Minute
	// maxCaches bounds the caches remembered per provider; the least
	// recently used go first. An entry is a few hundred bytes.
	maxCaches = 4096
	// reuseMargin is how long before its end a cache is no longer used,
	// so that a request does not reach Google just after its cache
	// expired; a tenth of the lifetime when that is shorter.
	reuseMargin = 30 * time.Second
	// refuseTooSmall is how long a prefix Google found too small is not
	// tried again. A prefix's size never changes (its hash names it), so
	// it is long; the entry is only kept so that a long conversation
	// does not try every turn.
	refuseTooSmall = time.Hour
	// refuseBriefly is how long a prefix is not tried again after another
	// failure (a quota, an overload, a timeout), which may pass soon.
	refuseBriefly = time.Minute
)

// Minimum cache sizes in tokens, as Google documents them: the Pro models
// need more than the Flash ones.
const (
	minTokensFlash = 1024
	minTokensPro   = 4096
)

// minCacheTokens is the smallest prefix Google caches for model.
func minCacheTokens(model string) int {
	if strings.Contains(model, "pro") {
		return minTokensPro
	}
	return minTokensFlash
}

// NewExplicitCache returns the explicit-cache state of one provider: a
// protocol.Preparer that creates and reuses caches for requests with
// cache breakpoints. The state is kept per key (the Preparation's scope).
func NewExplicitCache() protocol.Preparer {
	return &explicitCache{order: list.New(), entries: map[cacheKey]*list.Element{}, max: maxCaches}
}

// explicitCache remembers the caches it created, and the prefixes Google
// refused, by key, model and prefix.
type explicitCache struct {
	mu      sync.Mutex
	order   *list.List // of *cacheEntry, the most recently used first
	entries map[cacheKey]*list.Element
	max     int
}

// cacheKey names one prefix of one scope (an upstream and its key) and
// model.
type cacheKey struct {
	scope  string
	model  string
	prefix [sha256.Size]byte
}

// cacheEntry is a cache that exists, a prefix being created by another
// request, or a prefix not to try again until expires.
type cacheEntry struct {
	key cacheKey
	// name is the cache's resource name, "cachedContents/..."; empty for
	// a refusal or a creation under way.
	name    string
	expires time.Time
	pending bool
}

// cachePrefix is what a cache holds: the request up to the breakpoint.
// Its JSON encoding is the prefix's canonical form, which names it.
type cachePrefix struct {
	Contents          []content      `json:"contents,omitempty"`
	SystemInstruction *content       `json:"systemInstruction,omitempty"`
	Tools             []outTool      `json:"tools,omitempty"`
	ToolConfig        *outToolConfig `json:"toolConfig,omitempty"`
}

// createdCache is the part of a CachedContent answer that is read.
type createdCache struct {
	Name       string `json:"name"`
	ExpireTime string `json:"expireTime"`
	UpdateTime string `json:"updateTime"`
	CreateTime string `json:"createTime"`
}

// split is a request divided at its cache boundary.
type split struct {
	prefix cachePrefix
	// canonical is the prefix's JSON encoding.
	canonical []byte
	// rest is the request without its prefix.
	rest outRequest
	// conv is the prefix as a conversation, for the estimate of its size.
	conv llm.Conversation
}

// plain is the request whole, as EncodeRequest writes it: the two parts
// of the contents joined, with the turns on either side of the boundary
// merged when they are of one role.
func (s *split) plain() ([]byte, error) {
	contents := make([]content, 0, len(s.prefix.Contents)+len(s.rest.Contents))
	contents = append(contents, s.prefix.Contents...)
	rest := s.rest.Contents
	if n := len(contents); n > 0 && contents[n-1].Role == rest[0].Role {
		parts := append(append([]part(nil), contents[n-1].Parts...), rest[0].Parts...)
		contents[n-1] = content{Role: rest[0].Role, Parts: parts}
		rest = rest[1:]
	}
	contents = append(contents, rest...)
	return json.Marshal(outRequest{Contents: contents, SystemInstruction: s.prefix.SystemInstruction, Tools: s.prefix.Tools,
		ToolConfig: s.prefix.ToolConfig, GenerationConfig: s.rest.GenerationConfig})
}

// cacheBoundary is how many messages the cached prefix holds: those up
// to and including the last one with a breakpoint, as long as one message
// is left after them (a request must have contents of its own), else none
// when the system prompt or a tool has a breakpoint. ok is false when
// nothing is to be cached.
func cacheBoundary(c *llm.Conversation) (n int, ok bool) {
	for i := len(c.Messages) - 2; i >= 0; i-- {
		for _, p := range c.Messages[i].Parts {
			if p.Cache != nil {
				return i + 1, true
			}
		}
	}
	for _, p := range c.System {
		if p.Cache != nil {
			return 0, true
		}
	}
	for _, t := range c.Tools {
		if t.Cache != nil {
			return 0, true
		}
	}
	return 0, false
}

// splitRequest divides the request c at its cache boundary; ok is false
// when it has none or nothing before it.
func splitRequest(c *llm.Conversation, e llm.Edits) (s split, ok bool, err error) {
	n, ok := cacheBoundary(c)
	if !ok {
		return split{}, false, nil
	}
	names := callNames(c.Messages)
	// The two parts are written apart: turns of one role are merged, and
	// the cache must end where the breakpoint is.
	first, err := encodeTurns(c.Messages[:n], names)
	if err != nil {
		return split{}, false, err
	}
	rest, err := encodeTurns(c.Messages[n:], names)
	if err != nil {
		return split{}, false, err
	}
	if len(rest) == 0 {
		return split{}, false, nil
	}
	s.prefix.Contents = first
	s.prefix.SystemInstruction, s.prefix.Tools, s.prefix.ToolConfig = head(c, e)
	if len(first) == 0 && s.prefix.SystemInstruction == nil && s.prefix.Tools == nil {
		return split{}, false, nil
	}
	if s.canonical, err = json.Marshal(s.prefix); err != nil {
		return split{}, false, err
	}
	s.rest = outRequest{Contents: rest, GenerationConfig: genConfig(c, e)}
	s.conv = llm.Conversation{System: c.System, Tools: c.Tools, Messages: c.Messages[:n]}
	return s, true, nil
}

// Prepare puts the request's prefix into a cache, or finds the cache made
// for it before, and returns the request that refers to it. Every failure
// sends the plain request, which the split writes too, so that the
// request is not encoded twice.
func (x *explicitCache) Prepare(ctx context.Context, p protocol.Preparation) (protocol.Prepared, bool) {
	s, ok, err := splitRequest(p.Conv, p.Edits)
	if err != nil || !ok {
		return protocol.Prepared{}, false
	}
	ttl := p.TTL
	if ttl <= 0 {
		ttl = defaultCacheTTL
	}
	key := cacheKey{scope: p.Scope, model: p.Model, prefix: prefixHash(p.Model, s.canonical)}
	name, create := x.lookup(key, p.Now, ttl)
	if name == "" && !create {
		return plainOf(&s)
	}
	if name == "" {
		// Obviously too small: not worth a call that would be refused. The
		// estimate is another model family's count, so only a prefix
		// well below the minimum is skipped here; Google judges the rest.
		if tokens.QuickConversation(&s.conv) < minCacheTokens(p.Model)/2 {
			x.refuse(key, p.Now.Add(refuseTooSmall))
			return plainOf(&s)
		}
		if name, ok = x.create(ctx, p, key, s, ttl); !ok {
			return plainOf(&s)
		}
	}
	rest := s.rest
	rest.CachedContent = name
	body, err := json.Marshal(rest)
	if err != nil {
		x.drop(key, name)
		return protocol.Prepared{}, false
	}
	return protocol.Prepared{Body: body, Stale: func(status int, answer []byte) bool {
		if !staleCache(status, answer) {
			return false
		}
		x.drop(key, name)
		return true
	}}, true
}

// plainOf is the prepared plain request of s; ok false when it cannot be
// written, which leaves it to the dialect's encoder.
func plainOf(s *split) (protocol.Prepared, bool) {
	body, err := s.plain()
	if err != nil {
		return protocol.Prepared{}, false
	}
	return protocol.Prepared{Body: body}, true
}

// prefixHash names a prefix of a model.
func prefixHash(model string, canonical []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write(canonical)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// margin is how long before its end a cache of lifetime ttl is left.
func margin(ttl time.Duration) time.Duration { return min(reuseMargin, ttl/10) }

// lookup returns the name of a cache for key that lives long enough to be
// used, or reports that the caller should create one, in which case the
// key is marked as being created. Neither comes for a prefix refused a
// short while ago or being created by another request: those requests
// are sent plain.
func (x *explicitCache) lookup(key cacheKey, now time.Time, ttl time.Duration) (name string, create bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if el, ok := x.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		switch {
		case e.pending:
			return "", false
		case e.name != "" && now.Add(margin(ttl)).Before(e.expires):
			x.order.MoveToFront(el)
			return e.name, false
		case e.name == "" && now.Before(e.expires):
			return "", false
		}
		x.order.Remove(el)
		delete(x.entries, key)
	}
	x.put(&cacheEntry{key: key, pending: true})
	return "", true
}

// put adds an entry, evicting the least recently used past the bound.
// The caller holds mu.
func (x *explicitCache) put(e *cacheEntry) {
	if el, ok := x.entries[e.key]; ok {
		el.Value = e
		x.order.MoveToFront(el)
		return
	}
	x.entries[e.key] = x.order.PushFront(e)
	for x.order.Len() > x.max {
		last := x.order.Back()
		x.order.Remove(last)
		delete(x.entries, last.Value.(*cacheEntry).key)
	}
}

// refuse remembers that key is not to be tried until then.
func (x *explicitCache) refuse(key cacheKey, until time.Time) {
	x.mu.Lock()
	x.put(&cacheEntry{key: key, expires: until})
	x.mu.Unlock()
}

// drop forgets key's entry: the cache named name, or the creation under
// way when name is empty. A newer entry for the key is kept.
func (x *explicitCache) drop(key cacheKey, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	el, ok := x.entries[key]
	if !ok {
		return
	}
	if e := el.Value.(*cacheEntry); e.name == name {
		x.order.Remove(el)
		delete(x.entries, key)
	}
}

// createBody is a cachedContents.create body.
type createBody struct {
	Model string `json:"model"`
	cachePrefix
	TTL string `json:"ttl"`
}

// create makes the cache for key and remembers it, or remembers the
// refusal; it returns the cache's name.
func (x *explicitCache) create(ctx context.Context, p protocol.Preparation, key cacheKey, s split, ttl time.Duration) (string, bool) {
	model := p.Model
	if !strings.HasPrefix(model, "models/") && !strings.HasPrefix(model, "tunedModels/") {
		model = "models/" + model
	}
	body, err := json.Marshal(createBody{Model: model, cachePrefix: s.prefix, TTL: strconv.FormatInt(int64(ttl/time.Second), 10) + "s"})
	if err != nil {
		x.drop(key, "")
		return "", false
	}
	status, answer, err := p.Call(ctx, cachePath, body)
	if err != nil {
		if ctx.Err() != nil {
			// The client went away; nothing is known of the prefix.
			x.drop(key, "")
		} else {
			x.refuse(key, p.Now.Add(refuseBriefly))
		}
		return "", false
	}
	var c createdCache
	if status/100 != 2 || json.Unmarshal(answer, &c) != nil || !strings.HasPrefix(c.Name, "cachedContents/") {
		until := p.Now.Add(refuseBriefly)
		if tooSmall(status, answer) {
			until = p.Now.Add(refuseTooSmall)
		}
		x.refuse(key, until)
		return "", false
	}
	x.mu.Lock()
	x.put(&cacheEntry{key: key, name: c.Name, expires: p.Now.Add(lifetime(c, ttl))})
	x.mu.Unlock()
	return c.Name, true
}

// lifetime is how long a created cache lives: the ttl asked for, or less
// when Google's answer says so. It is measured from Google's own times
// (expireTime less updateTime) and counted from when the request was
// made, so that a difference between Google's clock and this one does not
// matter.
func lifetime(c createdCache, ttl time.Duration) time.Duration {
	exp, err := time.Parse(time.RFC3339Nano, c.ExpireTime)
	if err != nil {
		return ttl
	}
	from := c.UpdateTime
	if from == "" {
		from = c.CreateTime
	}
	start, err := time.Parse(time.RFC3339Nano, from)
	if err != nil {
		return ttl
	}
	if d := exp.Sub(start); d > 0 && d < ttl {
		return d
	}
	return ttl
}

// tooSmall reports Google's refusal of a cache below the model's minimum
// size: 400 "Cached content is too small. total_token_count=...,
// min_total_token_count=...".
func tooSmall(status int, body []byte) bool {
	return status == http.StatusBadRequest &&
		(bytes.Contains(body, []byte("min_total_token_count")) || bytes.Contains(bytes.ToLower(body), []byte("too small")))
}

// staleCache reports an answer that says the cache a request named is not
// there (expired, deleted, or never this key's): 400, 403 or 404 with a
// message about the CachedContent, such as "CachedContent not found (or
// permission denied)".
func staleCache(status int, body []byte) bool {
	switch status {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound:
		return bytes.Contains(bytes.ToLower(body), []byte("cachedcontent"))
	}
	return false
}
