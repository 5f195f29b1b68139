package hub

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"freelane/backend/redact"
)

// TestMessagesAreRedacted puts a key into the snapshot and into an update,
// spelt as an upstream might, and reads both with a real websocket client.
func TestMessagesAreRedacted(t *testing.T) {
	noLeaks(t)
	const key = "sk-HUBLEAK-0123456789abcdef"
	r := redact.New(redact.Key(key))
	h := New(Options{
		Snapshot: func() any { return map[string]string{"reason": "HTTP 401: " + strings.ToUpper(key)} },
		Update: func(time.Time) any {
			return map[string]string{"type": "update", "reason": "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+key))}
		},
		Interval: 10 * time.Millisecond,
		Redact:   r.Bytes,
		Logger:   quietLogger(),
	})
	th := start(t, h)
	c, _, err := dial(t, th.url, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	for _, m := range got {
		if !strings.Contains(m, redact.KeyMarker) || strings.Contains(strings.ToLower(m), "hubleak") || strings.Contains(m, "c2stSFVCTEVBSy") {
			t.Errorf("message %s", m)
		}
	}
}
