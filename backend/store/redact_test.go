package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"freelane/backend/llm"
	"freelane/backend/redact"
)

// TestRowsAreRedacted writes a trace and a state document that hold a key,
// spelt as an upstream might, and reads the file with a connection of its
// own.
func TestRowsAreRedacted(t *testing.T) {
	const key = "sk-STORELEAK-0123456789abcdef"
	path := filepath.Join(t.TempDir(), "freelane.db")
	ctx := context.Background()
	db, err := Open(ctx, path, WithRedactor(redact.New(redact.Key(key))))
	if err != nil {
		t.Fatal(err)
	}
	l := NewRequestLog(db, LogOptions{Logger: quietLogger})
	tr := sampleTrace(4)
	tr.Model = "m-" + key
	tr.Error = "HTTP 401: " + strings.ToUpper(key)
	tr.Notes = []string{"dropped " + strings.ReplaceAll(key, "-", "%2D")}
	tr.Attempts = []llm.Attempt{{Backend: "p/m", Class: llm.Caller, Reason: `bad key \u0073k-STORELEAK-0123456789abcdef`}}
	l.Record(tr)
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.PutState(ctx, "breakers", []byte(`{"reason":"`+key[2:]+`"}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var model, msg, attempts, notes, state string
	if err := raw.QueryRow(`SELECT model, error, attempts, notes FROM requests`).Scan(&model, &msg, &attempts, &notes); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRow(`SELECT value FROM state`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{model, msg, attempts, notes, state} {
		if strings.Contains(strings.ToLower(v), "storeleak") || !strings.Contains(v, redact.KeyMarker) {
			t.Errorf("stored %s", v)
		}
	}
}
