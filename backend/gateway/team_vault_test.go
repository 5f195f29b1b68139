package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"freelane/backend/gateway"
)

// TestTeamModeNeedsTheSharedVaultKey starts with store.postgres set and
// no FREELANE_VAULT_KEY, then with a key that is not one: both starts
// are refused before anything is opened, the error names the variable,
// and it never quotes the value given.
func TestTeamModeNeedsTheSharedVaultKey(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "set FREELANE_VAULT_KEY to one base64-encoded 32-byte key"},
		{map[string]string{"FREELANE_VAULT_KEY": "c2hvcnQta2V5LXZhbHVl"}, "FREELANE_VAULT_KEY is not a base64-encoded 32-byte key"},
	} {
		cfg := testConfig("http://127.0.0.1:1")
		// Nothing listens on port 1: the start must fail before it tries.
		cfg.Store.Postgres = "postgres://fl:pw-Secret9@127.0.0.1:1/freelane"
		_, err := gateway.New(context.Background(), gateway.Options{Config: cfg, DataDir: t.TempDir(), Listen: "127.0.0.1:0",
			LookupEnv: func(n string) (string, bool) { v, ok := tc.env[n]; return v, ok }})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("New with %v = %v, want an error saying %q", tc.env, err, tc.want)
		}
		for _, v := range tc.env {
			if strings.Contains(err.Error(), v) {
				t.Errorf("the error quotes the key: %v", err)
			}
		}
		if strings.Contains(err.Error(), "pw-Secret9") {
			t.Errorf("the error quotes the URL: %v", err)
		}
		if errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
}
